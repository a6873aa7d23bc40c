"""Stalwart's torch.distributed launcher, also run as `python3 -m determined.launch.torch_distributed`.

    python3 -m stalwart.harness.torch_distributed [TORCHRUN_OVERRIDES --] SCRIPT...
    python3 -m stalwart.harness.torch_distributed [--] --trial module:TrialClass

One slot in one container: SCRIPT replaces this process, with the torch.distributed environment
of a world of one. Otherwise torch's own launcher (`torch.distributed.run`) starts one worker per
slot of this container, with `--nnodes` = containers, `--node_rank` = this container's rank and
the rendezvous at the chief container's address. Each worker runs under `wrap_rank`, which
prefixes its output lines with `[rank=N]`. If any worker dies, torchrun stops the others and
exits non-zero; SIGTERM/SIGINT reach every worker.

Where the containers are comes from the trial environment (set by the master):
STALWART_NUM_CONTAINERS, STALWART_CONTAINER_RANK (or DET_CONTAINER_RANK; 0 is the chief),
STALWART_CONTAINER_ADDRS (JSON list, rank order), STALWART_RENDEZVOUS_PORT and DET_SLOT_IDS
(JSON list of this container's slots). Without them: one container at 127.0.0.1, a free port,
and the slots of the trial's info file (one slot off-cluster).
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
from collections.abc import Mapping
from typing import Any

from stalwart.harness.info import ClusterInfo, get_cluster_info

USAGE = "usage: python3 -m determined.launch.torch_distributed [TORCH_OVERRIDES --] SCRIPT..."


class LaunchError(Exception):
    """A launcher input (environment or arguments) is wrong; the message says which and how to fix it."""


@dataclasses.dataclass(frozen=True)
class Topology:
    """Where this container sits among the trial's containers."""

    num_containers: int
    container_rank: int
    addrs: list[str]
    port: int
    slots: int

    @property
    def chief_addr(self) -> str:
        return self.addrs[0]

    @property
    def world_size(self) -> int:
        return self.num_containers * self.slots


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _json_list(env: Mapping[str, str], name: str) -> list[Any] | None:
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise LaunchError(f"{name}={raw!r} is not JSON: it must be a JSON list such as '[0, 1]'") from err
    if not isinstance(value, list):
        raise LaunchError(f"{name}={raw!r} must be a JSON list, e.g. '[0, 1]'")
    return value


def _int(env: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        raw = env.get(name)
        if raw not in (None, ""):
            try:
                return int(raw)
            except ValueError:
                raise LaunchError(f"{name}={raw!r} must be an integer") from None
    return None


def topology(env: Mapping[str, str] | None = None, info: ClusterInfo | None = None) -> Topology:
    """The topology from the trial environment (see the module docstring), checked for consistency."""
    env = os.environ if env is None else env
    info = get_cluster_info() if info is None else info
    addrs = _json_list(env, "STALWART_CONTAINER_ADDRS")
    if addrs is None:
        addrs = list(info.container_addrs) if info is not None and info.container_addrs else ["127.0.0.1"]
    if not addrs or not all(isinstance(a, str) and a for a in addrs):
        raise LaunchError(f"STALWART_CONTAINER_ADDRS must list one non-empty address per container, got {addrs!r}")
    num = _int(env, "STALWART_NUM_CONTAINERS")
    num = len(addrs) if num is None else num
    if num < 1 or num != len(addrs):
        raise LaunchError(f"STALWART_NUM_CONTAINERS={num} but STALWART_CONTAINER_ADDRS lists {len(addrs)} "
                          "address(es): give one address per container")
    rank = _int(env, "STALWART_CONTAINER_RANK", "DET_CONTAINER_RANK")
    if rank is None:
        rank = info.container_rank if info is not None else 0
    if not 0 <= rank < num:
        raise LaunchError(f"container rank {rank} (STALWART_CONTAINER_RANK) is outside 0..{num - 1}")
    slot_ids = _json_list(env, "DET_SLOT_IDS")
    if slot_ids is None:
        slot_ids = list(info.slot_ids) if info is not None and info.slot_ids else [0]
    if not slot_ids:
        raise LaunchError("DET_SLOT_IDS is an empty list: this container has no slots to start workers on")
    port = _int(env, "STALWART_RENDEZVOUS_PORT")
    if port is None:
        if num > 1:
            raise LaunchError("STALWART_RENDEZVOUS_PORT is not set: a trial spanning several containers needs the "
                              "rendezvous port the master chose (the same in every container)")
        port = free_port()
    if not 0 < port < 65536:
        raise LaunchError(f"STALWART_RENDEZVOUS_PORT={port} is not a TCP port (1..65535)")
    return Topology(num_containers=num, container_rank=rank, addrs=[str(a) for a in addrs], port=port,
                    slots=len(slot_ids))


def split_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """(torchrun overrides, the command): overrides are whatever precedes a `--`."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return [], argv


def worker_command(script: list[str]) -> list[str]:
    """The worker's argv. `--trial module:Class` runs the PyTorchTrial harness; `python3` is this interpreter."""
    if script[:1] == ["--trial"]:
        if len(script) < 2:
            raise LaunchError("--trial needs the Trial class, e.g. --trial model_def:MyTrial")
        spec, rest = script[1], script[2:]
    elif script and script[0].startswith("--trial="):
        spec, rest = script[0].split("=", 1)[1], script[1:]
    else:
        if script[0] in ("python", "python3"):
            return [sys.executable, *script[1:]]
        return list(script)
    local = os.environ.get("STALWART_LOCAL_CONFIG")
    return [sys.executable, "-m", "stalwart.harness.pytorch.legacy", spec, *rest,
            *(["--config", local] if local else [])]


def torchrun_command(topo: Topology, overrides: list[str], cmd: list[str]) -> list[str]:
    """`python -m torch.distributed.run ...` starting one wrap_rank'ed worker per slot of this container."""
    return [
        sys.executable, "-m", "torch.distributed.run",
        f"--nnodes={topo.num_containers}", f"--nproc_per_node={topo.slots}", f"--node_rank={topo.container_rank}",
        f"--master_addr={topo.chief_addr}", f"--master_port={topo.port}", "--max_restarts=0",
        *overrides,
        "--no-python", sys.executable, "-m", "stalwart.harness.wrap_rank", "--", *cmd,
    ]


def single_process_env(topo: Topology) -> dict[str, str]:
    """torch.distributed's environment for a world of one, so init_process_group() works unchanged."""
    return {"RANK": "0", "LOCAL_RANK": "0", "GROUP_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
            "GROUP_WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(topo.port)}


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    overrides, script = split_overrides(argv)
    if not script:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        cmd = worker_command(script)
        topo = topology()
    except (LaunchError, ValueError) as err:  # ValueError: the info file's view of the same variables
        print(f"torch_distributed launcher: {err}", file=sys.stderr)
        return 2
    os.environ["USE_TORCH_DISTRIBUTED"] = "True"
    os.environ["DET_CHIEF_IP"] = topo.chief_addr
    if topo.world_size == 1 and not overrides:
        os.environ.update(single_process_env(topo))
        argv_ = cmd
    else:
        argv_ = torchrun_command(topo, overrides, cmd)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(argv_[0], argv_)
    except OSError as err:
        print(f"torch_distributed launcher: cannot run {argv_[0]!r}: {err}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
