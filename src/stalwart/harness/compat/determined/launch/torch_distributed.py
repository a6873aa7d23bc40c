"""`python3 -m determined.launch.torch_distributed [TORCH_OVERRIDES --] SCRIPT...` as Determined's launcher.

One slot: the script runs in this process's place with the torch.distributed environment of a
world of one (RANK 0, WORLD_SIZE 1, MASTER_ADDR/PORT), so `init_process_group()` works. Several
slots on this machine: `torch.distributed.run` starts one worker per slot. `--trial module:Class`
(Determined's legacy form) runs the PyTorchTrial harness.
"""

from __future__ import annotations

import os
import socket
import sys

from stalwart.harness.info import get_cluster_info


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def split_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """(torchrun overrides, the command): overrides are whatever precedes a `--`."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return [], argv


def command(script: list[str]) -> list[str]:
    """The worker command; `--trial module:Class` runs the PyTorchTrial harness (off-cluster with the local config)."""
    if script[:1] == ["--trial"] and len(script) >= 2:
        spec, rest = script[1], script[2:]
    elif script and script[0].startswith("--trial="):
        spec, rest = script[0].split("=", 1)[1], script[1:]
    else:
        return script
    local = os.environ.get("STALWART_LOCAL_CONFIG")
    return [sys.executable, "-m", "stalwart.harness.pytorch.legacy", spec, *rest,
            *(["--config", local] if local else [])]


def main(argv: list[str]) -> int:
    overrides, script = split_overrides(argv)
    if not script:
        print("usage: python3 -m determined.launch.torch_distributed [TORCH_OVERRIDES --] SCRIPT...", file=sys.stderr)
        return 2
    cmd = command(script)
    info = get_cluster_info()
    slots = len(info.slot_ids) if info and info.slot_ids else 1
    port = str(_free_port())
    os.environ["USE_TORCH_DISTRIBUTED"] = "True"
    os.environ["DET_CHIEF_IP"] = "127.0.0.1"
    if slots <= 1:
        os.environ.update({"RANK": "0", "LOCAL_RANK": "0", "GROUP_RANK": "0", "WORLD_SIZE": "1",
                           "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
        os.execvp(cmd[0], cmd)
    run = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={slots}",
           "--master_addr=127.0.0.1", f"--master_port={port}", "--max_restarts=0", *overrides]
    if cmd[0] == sys.executable and cmd[1:2] == ["-m"]:
        run += ["-m", *cmd[2:]]
    elif os.path.basename(cmd[0]).startswith("python"):
        run += cmd[1:]
    else:
        run += ["--no-python", *cmd]
    os.execvp(run[0], run)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
