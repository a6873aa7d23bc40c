"""`python -m stalwart.harness.wrap_rank [--] CMD...`: run CMD with every output line prefixed `[rank=N] `.

N is the worker's global rank (RANK, set by torchrun). The agent ships trial output line by line
and files `[rank=N]` lines under that rank, as Determined's log shipper does. Signals that ask a
worker to stop (TERM, INT, HUP, USR1, USR2) are passed on to CMD; the exit status is CMD's (128 + the
signal number when a signal ended it, as a shell reports it).

torchrun starts each worker in a session of its own, so killing the launcher's process group (what
the agent does to a trial) would not reach the workers: wrap_rank watches its parent, and when
torchrun is gone it kills the worker at once (the worker also gets SIGKILL if wrap_rank dies).

One exception: gloo workers sometimes abort (SIGABRT, "terminate called without an active
exception") in interpreter finalisers after their work is done, which would fail the whole gang.
A worker whose Core API context (`with core.init(...)`) ended cleanly has written the file named by
STALWART_WORKER_DONE_FILE; an abort after that is reported and counted as a clean exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from types import FrameType
from typing import BinaryIO

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
PARENT_POLL_S = 0.2
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the worker, before exec: SIGKILL when wrap_rank (its parent) dies (Linux; elsewhere a no-op)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _watch_parent(parent: int, proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker as soon as the launcher (our parent) is gone: nothing may outlive the trial."""
    while proc.poll() is None:
        if os.getppid() != parent:
            proc.kill()
            return
        time.sleep(PARENT_POLL_S)


def _pump(src: BinaryIO, dst: BinaryIO, prefix: bytes) -> None:
    for line in iter(src.readline, b""):
        dst.write(prefix + line if line.endswith(b"\n") else prefix + line + b"\n")
        dst.flush()
    src.close()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m stalwart.harness.wrap_rank [--] CMD...", file=sys.stderr)
        return 2
    return run_with_rank(argv, os.environ.get("RANK", "?"))


def run_with_rank(argv: list[str], rank: str) -> int:
    """Run the command `argv` with each output line prefixed `[rank=<rank>] `; its exit status."""
    prefix = f"[rank={rank}] ".encode()
    with tempfile.TemporaryDirectory(prefix="stalwart-worker-") as tmp:
        done = os.path.join(tmp, "done")
        code = _run(argv, prefix, {**os.environ, "PYTHONUNBUFFERED": "1", "STALWART_WORKER_DONE_FILE": done})
        if code == 128 + signal.SIGABRT and os.path.exists(done):
            sys.stderr.buffer.write(prefix + b"the worker aborted (SIGABRT) while exiting after its Core API context "
                                    b"had closed cleanly (a known gloo teardown abort): counted as a clean exit\n")
            sys.stderr.flush()
            return 0
    return code


def _run(argv: list[str], prefix: bytes, env: dict[str, str]) -> int:
    parent = os.getppid()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                preexec_fn=_die_with_parent)
    except OSError as err:
        print(f"{prefix.decode()}cannot run {argv[0]!r}: {err}", file=sys.stderr, flush=True)
        return 127

    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    pumps = [threading.Thread(target=_pump, args=(proc.stdout, sys.stdout.buffer, prefix), daemon=True),
             threading.Thread(target=_pump, args=(proc.stderr, sys.stderr.buffer, prefix), daemon=True)]
    threading.Thread(target=_watch_parent, args=(parent, proc), daemon=True).start()
    for p in pumps:
        p.start()
    code = proc.wait()
    for p in pumps:
        p.join(timeout=10)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
