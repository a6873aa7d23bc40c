"""Submitting one allocation to Slurm (docs/slurm.md): whose job it is (the owner's linked OS user, else the
manager's `user_name`), its `sbatch` arguments and script (`rm.slurm.batch`), and its single-use join credential,
of which only the hash is kept. A run that could never be submitted (no OS user, an image without
`container_run_type: podman`, arguments Slurm refuses) fails as its set-up's failure, naming the fix."""

from __future__ import annotations

import getpass
import logging
import os
import pathlib
import pwd
import tempfile
from typing import Any

from stalwart.api.states import ExitReason
from stalwart.config.slurm import SlurmConfig
from stalwart.master.allocations import env as task_env, root_guard
from stalwart.master.identity import tokens
from stalwart.master.queries import engine_jobs
from stalwart.master.queries.rows import Conn
from stalwart.master.scheduling import engine_runs
from stalwart.master.service import Master
from stalwart.rm import Gang
from stalwart.rm.slurm import SlurmCli, SlurmError
from stalwart.rm.slurm.batch import JOIN_TOKEN_ENV, JobSpec, batch_script, sbatch_args

log = logging.getLogger(__name__)
DEFAULT_OUTPUT_DIR = pathlib.Path(tempfile.gettempdir()) / "stalwart-slurm-jobs"
TRANSIENT = ("Unable to contact", "Socket timed out", "timed out", "Zero Bytes were transmitted")


class CannotSubmit(Exception):
    """This run can never become a job as configured (the message says what to change)."""


def job_name(cfg: SlurmConfig, allocation_id: str) -> str:
    return f"{cfg.job_name_prefix}{allocation_id}"


def output_dir(cfg: SlurmConfig) -> pathlib.Path:
    """Where jobs write their output (the one-shot agents' own log): writable by every job's user. The default is
    under /tmp, not the master's home, which no other OS user may enter."""
    out = pathlib.Path(cfg.job_output_dir) if cfg.job_output_dir else DEFAULT_OUTPUT_DIR
    if not out.is_dir():
        out.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            out.chmod(0o1777)  # jobs run as their owners' OS users; sticky: none removes another's file
    return out


def master_url(m: Master, cfg: SlurmConfig) -> str:
    """How jobs reach the master: `master_host`/`master_port` where given, else its advertised URL."""
    if not cfg.master_host:
        return m.settings.url
    port = cfg.master_port or m.settings.url.rsplit(":", 1)[-1].split("/")[0]
    return f"{cfg.master_scheme}://{cfg.master_host}:{port}"


def os_user(conn: Conn, cfg: SlurmConfig, owner: dict[str, Any], root_allowed: bool) -> str:
    """The OS user the job runs as: the owner's link (issue 25), else the pool's `user_name`, which may not be root
    unless root tasks are allowed (`security.allow_root_tasks`, as for a link: allocations/root_guard.py)."""
    link = task_env.run_as(conn, owner["owner"], owner["project_id"])
    user = link["user"] if link else cfg.user_name
    if not link and user and _is_root(user) and not root_allowed:
        raise CannotSubmit(f"resource_manager.user_name is {user}, which is root, and this master does not allow "
                           f"root tasks ({root_guard.SETTINGS} is false): name a non-root user_name, link "
                           f"{owner['owner']} to a non-root OS user, or allow root tasks")
    if not user:
        raise CannotSubmit(
            f"user {owner['owner']} has no linked OS user, and Slurm jobs run as their owner's OS user: an admin "
            f"links one (`stalwart user link-with-agent-user {owner['owner']} --agent-user NAME --agent-uid UID "
            f"--agent-group GROUP --agent-gid GID`), or sets `resource_manager.user_name` in the master config")
    me = getpass.getuser()
    if os.geteuid() != 0 and user != me:
        raise CannotSubmit(f"this run's jobs must run as OS user {user}, but the master runs as {me}, not root, and "
                           f"can submit jobs only as itself: run the master as root, or link {owner['owner']} with "
                           f"{me}")
    return str(user)


def _is_root(user: str) -> bool:
    """Whether OS user `user` is uid 0 on this machine (a name it does not know: only `root` is)."""
    try:
        return pwd.getpwnam(user).pw_uid == 0
    except KeyError:
        return user == "root"


def refusal(conn: Conn, cfg: SlurmConfig, config: dict[str, Any], owner: str, project_id: int | None,
            root_allowed: bool) -> str | None:
    """Why new work of `owner` with `config` could never run as Slurm jobs (None: it can): what `create` says."""
    try:
        os_user(conn, cfg, {"owner": owner, "project_id": project_id}, root_allowed)
        _check_image(cfg, config)
    except CannotSubmit as why:
        return str(why)
    return None


def _check_image(cfg: SlurmConfig, config: dict[str, Any]) -> None:
    image = (config.get("environment") or {}).get("image")
    if image and cfg.container_run_type != "podman":
        raise CannotSubmit("environment.image asks for an image, but this Slurm manager runs tasks as processes: set "
                           "`container_run_type: podman` under resource_manager (the nodes need podman), or remove "
                           "environment.image")


def spec_of(m: Master, cfg: SlurmConfig, gang: Gang, config: dict[str, Any]) -> JobSpec:
    slurm = config.get("slurm") or {}
    _check_image(cfg, config)
    name = job_name(cfg, gang.allocation_id)
    return JobSpec(name=name, partition=gang.pool, slots=gang.slots, slot_type=cfg.slot_type,
                   output_path=str(output_dir(cfg) / f"{name}.out"), agent_command=cfg.agent_command,
                   master_url=master_url(m, cfg), allocation_id=gang.allocation_id, resource_pool=gang.pool,
                   slots_per_node=slurm.get("slots_per_node"), gres_supported=cfg.gres_supported,
                   gpu_type=slurm.get("gpu_type"), sbatch_args=tuple(slurm.get("sbatch_args") or ()),
                   runtime="podman" if cfg.container_run_type == "podman" else "process")


def submit(m: Master, conn: Conn, cli: SlurmCli, cfg: SlurmConfig, gang: Gang) -> str | None:
    """Submit `gang` as one job; its id, or None when it failed (the run then failed, or waits with the reason)."""
    owner = engine_jobs.owner_of(conn, gang.allocation_id)
    try:
        user = os_user(conn, cfg, owner, m.settings.cluster.root_tasks_allowed(gang.pool))
        spec = spec_of(m, cfg, gang, owner["config"])
        token = tokens.new_agent_credential()
        as_uid = user if os.geteuid() == 0 and user != getpass.getuser() else None
        job_id = cli.submit(sbatch_args(spec), batch_script(spec), env={JOIN_TOKEN_ENV: token}, as_uid=as_uid)
    except CannotSubmit as why:
        engine_runs.fail(m, conn, gang.allocation_id, str(why), ExitReason.SETUP_FAILED)
        return None
    except SlurmError as err:
        if any(word in str(err) for word in TRANSIENT):
            engine_runs.wait_reason(conn, gang, f"Slurm did not take the job yet: {err}")
            return None
        engine_runs.fail(m, conn, gang.allocation_id, f"Slurm refused the job: {err}", ExitReason.SETUP_FAILED)
        return None
    engine_jobs.set_submitted(conn, gang.allocation_id, job_id, tokens.credential_hash(token))
    log.info("allocation %s submitted as Slurm job %s (partition %s, as %s)", gang.allocation_id, job_id, gang.pool,
             user)
    return job_id
