"""Every process a run started, however it left its process group: found by parentage, stopped, then killed.

A run's processes share its process group until one calls `setsid` (sshd's per-connection children, daemons,
some launchers); killing the group then misses it, and once its parent dies it is reparented away from the run.
So the run's first process (harness/launch.py) makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`):
whatever it started and was orphaned becomes its child instead of init's, and stays in its tree. `kill_tree` walks
that tree through /proc, stops every process in it (repeating the walk until it finds none new, so a process that
forks meanwhile cannot slip out), then kills them all. Linux only; elsewhere `become_subreaper` says False and the
process group is all there is.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pathlib
import signal
import sys
import time
from collections.abc import Collection

PR_SET_CHILD_SUBREAPER = 36
WALKS = 50
"""How many times `kill_tree` walks the tree for processes started while it stops the others."""


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def parent_of_each() -> dict[int, int]:
    """pid -> parent pid of every process now (a process gone while read is left out)."""
    parents = {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    return parents


def descendants(pid: int) -> set[int]:
    """Every process below `pid` now: its children, theirs, and so on."""
    children: dict[int, list[int]] = {}
    for child, parent in parent_of_each().items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _send(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill_tree(root: int, *, include_root: bool = True, spare: Collection[int] = ()) -> set[int]:
    """SIGKILL every descendant of `root` (and `root` itself with `include_root`), but those in `spare`; the pids
    signalled. Each is stopped first, so none starts another process between the walk and the kill."""
    stopped: set[int] = set()
    for _ in range(WALKS):
        new = descendants(root) - stopped - set(spare)
        if not new:
            break
        for pid in new:
            _send(pid, signal.SIGSTOP)
        stopped |= new
    targets = stopped | ({root} if include_root else set())
    for pid in targets:
        _send(pid, signal.SIGKILL)
    return targets


def reap_children(timeout: float) -> None:
    """Wait for this process's children (its own and the orphans it reaps as subreaper) until none is left or
    `timeout` has passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)
