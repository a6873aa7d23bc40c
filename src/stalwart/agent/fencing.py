"""Fencing: one live agent per work directory, records of the process groups it starts, and their end.

No trial may run twice at once. The master re-queues an allocation only when no process of it can
still run, so the agent guarantees three things:

- **One agent per work directory**: `AgentLock` holds an exclusive `flock` on `<work>/agent.lock`
  for the agent's life. A second agent on the same directory is refused at once; one started after
  a crash gets the lock (the kernel released it with the dead process) and knows its predecessor is
  gone, so it may tell the master to hand it the predecessor's place (`replaces`).
- **Nothing it started outlives it**: every launcher gets the read end of a pipe whose only write
  end the agent holds (`FENCE_FD_ENV`); the launcher forks a watchdog (`harness/fence.py`) that kills its whole process
  group when that pipe reaches end-of-file, i.e. the moment the agent dies, however it dies.
  `ProcessRecord` files (one per allocation) name each process group with its start time, and a
  restarted agent kills any survivor (`kill_recorded`) before it registers as running nothing.
- **Nothing it started outlives its lease**: when the master has not answered for longer than its
  `agent_timeout` less a margin (`Lease`), the agent kills its processes itself, so by the time the
  master declares the agent lost and re-queues its work, that work has stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import pathlib
import signal
import threading
import time
import uuid
from typing import Any

from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.process_tree import kill_tree

log = logging.getLogger("stalwart.agent")

LOCK_NAME = "agent.lock"
STATE_NAME = "agent-state.json"
RECORD_NAME = "process.json"
WORK_ID_NAME = "work-dir-id"
FENCE_FD_ENV = "STALWART_FENCE_FD"  # names the launcher's end of the pipe; harness/fence.py reads it


class AgentAlreadyRunning(InvalidStateError):
    """Another live agent holds this work directory."""


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat from field 3 (the state) on, or None if there is no such process."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after its closing one
    fields = stat[stat.rfind(")") + 2:].split()
    return fields if len(fields) > 19 else None


def proc_start_time(pid: int) -> int | None:
    """The start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat), None if it is gone.

    Together with the pid it names one process for good: a pid the kernel reuses has a new start time.
    """
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def running(pid: int, start_time: int | None = None) -> bool:
    """The process exists and is not a zombie (a dead process nobody has reaped yet); with `start_time`,
    it is that very process, not one that reused the pid."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z" and (start_time is None or int(fields[19]) == start_time)


class AgentLock:
    """An exclusive lock on the work directory for the life of this process, and this agent's identity.

    `incarnation` names this run of the agent (new at every start); `previous` is the incarnation that
    held the directory before, read from the state file: it is dead, since the lock was free.
    """

    def __init__(self, work_root: pathlib.Path, agent_id: str) -> None:
        self.work_root = pathlib.Path(work_root)
        self.agent_id = agent_id
        self.incarnation = uuid.uuid4().hex
        self.previous: str | None = None
        self._fd: int | None = None

    def acquire(self) -> None:
        path = self.work_root / LOCK_NAME
        try:
            self.work_root.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as err:
            raise InvalidRequest(f"--work-dir {self.work_root}: cannot use it as the agent's work directory "
                                 f"({err.strerror or err}); give a writable directory") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = self._read_state().get("pid")
            raise AgentAlreadyRunning(
                f"another agent{f' (pid {holder})' if holder else ''} is running with work directory "
                f"{self.work_root}; stop it first, or give this one its own --work-dir and --agent-id") from None
        self._fd = fd
        state = self._read_state()
        if state.get("agent_id") == self.agent_id:
            self.previous = state.get("incarnation")
        self._write_state({"agent_id": self.agent_id, "incarnation": self.incarnation, "pid": os.getpid()})

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _read_state(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = json.loads((self.work_root / STATE_NAME).read_text())
        except (OSError, ValueError):
            return {}
        return state

    def _write_state(self, state: dict[str, Any]) -> None:
        tmp = self.work_root / f".{STATE_NAME}.tmp"
        _write_private(tmp, json.dumps(state))
        os.replace(tmp, self.work_root / STATE_NAME)


class ProcessRecord:
    """`<allocation dir>/process.json`: the process group an allocation's launcher leads, and when it began."""

    def __init__(self, alloc_dir: pathlib.Path) -> None:
        self.path = pathlib.Path(alloc_dir) / RECORD_NAME

    def write(self, pgid: int) -> None:
        tmp = self.path.with_suffix(".tmp")
        _write_private(tmp, json.dumps({"pgid": pgid, "start_time": proc_start_time(pgid)}))
        os.replace(tmp, self.path)

    def read(self) -> dict[str, Any] | None:
        try:
            rec = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        return rec if isinstance(rec, dict) and isinstance(rec.get("pgid"), int) else None

    def alive(self) -> bool:
        """Whether the recorded group leader still runs (the same process: same pid and start time)."""
        rec = self.read()
        return rec is not None and isinstance(rec.get("start_time"), int) and running(rec["pgid"], rec["start_time"])

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def work_dir_id(work_root: pathlib.Path) -> str:
    """This work directory's own id, made once and kept in it. It marks what its agents start outside it (their
    containers): agents of other work directories or clusters sharing an engine, even under the same agent id,
    then never take those for their own survivors."""
    path = pathlib.Path(work_root) / WORK_ID_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(uuid.uuid4().hex)
    return path.read_text().strip()


def _write_private(path: pathlib.Path, text: str) -> None:
    """Write a file only the agent's user may read (tasks of other OS users share its work root)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)  # an older file keeps its mode through O_CREAT


def kill_recorded(work_root: pathlib.Path, timeout: float = 10.0) -> list[str]:
    """Kill every process group a previous agent on this directory recorded and that still runs.

    Returns the allocations whose processes were killed. Runs before registering, so the master hears
    "none running" only when none is.
    """
    killed = []
    for record_path in sorted(pathlib.Path(work_root).glob(f"*/{RECORD_NAME}")):
        record = ProcessRecord(record_path.parent)
        rec = record.read()
        if rec is None or not record.alive():
            record.remove()
            continue
        pgid = rec["pgid"]
        log.warning("killing process group %d of allocation %s, left running by a previous agent", pgid,
                    record_path.parent.name)
        kill_tree(pgid)  # the group's leader is the run's launcher: its tree holds what left the group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while record.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        record.remove()
        killed.append(record_path.parent.name)
    return killed


class Lease:
    """How long the agent may keep its processes without hearing from the master.

    `renew(sent_at)` records a successful call by the time it was *sent* (never later than the moment the
    master saw it); once `expired()`, the master may already count the agent as lost, so the agent must
    kill what it runs. The margin keeps the agent's deadline ahead of the master's.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._timeout: float | None = None  # unknown until the master says it at registration

    def set_timeout(self, agent_timeout: float | None) -> None:
        if isinstance(agent_timeout, (int, float)) and agent_timeout > 0:
            with self._lock:
                self._timeout = float(agent_timeout) - min(5.0, float(agent_timeout) / 4)

    def renew(self, sent_at: float) -> None:
        with self._lock:
            self._last = max(self._last, sent_at)

    def expired(self) -> bool:
        with self._lock:
            return self._timeout is not None and time.monotonic() - self._last > self._timeout

    def silent_for(self) -> float:
        with self._lock:
            return time.monotonic() - self._last
