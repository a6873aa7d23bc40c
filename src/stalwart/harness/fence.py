"""The launcher's watchdog: every process of the trial dies the moment its agent dies.

The agent passes the read end of a pipe whose only write end it holds (`STALWART_FENCE_FD`). Before
the launcher starts the entrypoint it forks a child that waits for end-of-file on that pipe (the
kernel closes the agent's end when the agent exits, even under `kill -9`) and then kills the launcher's
whole tree (the launcher is a child subreaper: what left the process group with `setsid` is still below it,
see process_tree.py) and its own process group. So no trial keeps training beside the copy a restarted
agent or another agent starts. See `agent/fencing.py`.
"""

from __future__ import annotations

import os
import signal

from stalwart.process_tree import kill_tree

FENCE_FD_ENV = "STALWART_FENCE_FD"


def watch_agent() -> None:
    """Start the watchdog if the agent asked for one; a no-op otherwise (e.g. `--local` runs)."""
    raw = os.environ.pop(FENCE_FD_ENV, None)
    if not raw:
        return
    try:
        fence_fd = int(raw)
        os.fstat(fence_fd)
    except (ValueError, OSError):
        return
    launcher = os.getpid()
    if os.fork() != 0:
        os.close(fence_fd)  # the entrypoint holds no copy
        return
    try:  # the watchdog: hold none of the trial's output pipes, outlast signals sent to the group
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            try:
                if not os.read(fence_fd, 64):
                    break
            except InterruptedError:
                continue
        if os.getppid() == launcher:  # still below it: its tree is the trial's
            kill_tree(launcher, spare=(os.getpid(),))
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)
