"""`stalwart up --slurm`: the master config that puts this home's master in front of Slurm, and the cancel of its
jobs at `stalwart down`.

The config is written to $STALWART_HOME/master-slurm.yaml at each start that starts a master (never to the kept
master-config.yaml of `up --config`): `resource_manager: {type: slurm, ...}` with one resource pool per partition
Slurm reports, Slurm's default partition as the default compute and aux pool, `slot_type: cpu` unless a node has
GPUs (then `cuda`), and a job name prefix of this home's own, so that `down` cancels this master's jobs and no
other's. A master config given with --config keeps its other sections; its resource manager is replaced, except
that the keys of a `type: slurm` one are kept (`agent_command`, `job_output_dir`, ...), and its pool entries named
after a partition keep their settings."""

from __future__ import annotations

import hashlib
import pathlib
import socket
from typing import Any

import yaml

from stalwart.api.errors import ConfigError, InvalidStateError
from stalwart.cli import output
from stalwart.cli.kept_settings import keep
from stalwart.config.master import load_master_config
from stalwart.rm.slurm import SlurmCli, SlurmError

SLURM_CONFIG = "master-slurm.yaml"
POOL_DEFAULTS = ("default_compute_resource_pool", "default_aux_resource_pool")


def job_name_prefix(base: pathlib.Path) -> str:
    """This home's Slurm job names start with it: `stalwart-` and a digest of this host and home."""
    digest = hashlib.sha256(f"{socket.gethostname()}:{base.resolve()}".encode()).hexdigest()[:8]
    return f"stalwart-{digest}-"


def ask_slurm(cli: SlurmCli) -> tuple[list[str], bool]:
    """Slurm's partitions (the default one first) and whether any node has GPUs; a clear error where Slurm does not
    answer."""
    try:
        partitions, nodes = cli.partitions(), cli.nodes()
    except SlurmError as err:
        raise InvalidStateError(f"`stalwart up --slurm` could not ask Slurm for its partitions: {err}") from None
    if not partitions:
        raise InvalidStateError("Slurm reports no partition: `stalwart up --slurm` makes one resource pool per "
                                "partition; add a PartitionName= line to slurm.conf (`scontrol show partition`)")
    return partitions, any(node.gpus > 0 for node in nodes)


def write_config(base: pathlib.Path, given: str | None, user_name: str | None) -> str:
    """Ask Slurm, write this home's master-slurm.yaml (see the module's docstring) and return its path."""
    partitions, gpus = ask_slurm(SlurmCli())
    cfg = _given(given)
    old_rm = cfg.get("resource_manager") or {}
    rm: dict[str, Any] = dict(old_rm) if old_rm.get("type") == "slurm" else {}
    rm["type"] = "slurm"
    rm.setdefault("slot_type", "cuda" if gpus else "cpu")
    rm.setdefault("job_name_prefix", job_name_prefix(base))
    if user_name:
        rm["user_name"] = user_name
    for key in POOL_DEFAULTS:
        if rm.get(key) not in partitions:
            rm[key] = partitions[0]
    given_pools = {p.get("pool_name"): p for p in cfg.get("resource_pools") or [] if isinstance(p, dict)}
    cfg["resource_pools"] = [{**given_pools.get(name, {}), "pool_name": name} for name in partitions]
    if dropped := sorted(str(name) for name in given_pools if name not in partitions):
        output.info(f"Pools of {given} that are no Slurm partition are left out: {', '.join(dropped)}")
    cfg["resource_manager"] = rm
    path = base / SLURM_CONFIG
    base.mkdir(parents=True, exist_ok=True)
    keep(path, yaml.safe_dump(cfg, sort_keys=False))
    load_master_config(path)  # a key the given config had that Slurm's manager refuses: say so now
    return str(path)


def _given(given: str | None) -> dict[str, Any]:
    """The master config given with --config, as its YAML mapping (validated first)."""
    if given is None:
        return {}
    load_master_config(given)
    data = yaml.safe_load(pathlib.Path(given).read_text()) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"invalid master config {given}: expected a mapping of keys at its top")
    return data


def cancel_jobs(prefix: str) -> list[str]:
    """Cancel the live Slurm jobs whose names start with `prefix` (this home's master's); their ids. A Slurm that
    does not answer is an InvalidStateError naming what to do."""
    cli = SlurmCli()
    try:
        ids = [job.job_id for job in cli.jobs(prefix)]
        cli.cancel(ids)
    except SlurmError as err:
        raise InvalidStateError(f"the master stopped, but its Slurm jobs could not be cancelled: {err}\nCancel "
                                f"them by hand: `squeue -h -o '%i %j'` lists them, their names start with "
                                f"{prefix}") from None
    return ids
