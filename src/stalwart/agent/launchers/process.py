"""The process launcher: a run is an OS process leading its own process group, fenced by a pipe to the agent.

The run's first process (harness/launch.py) is a child subreaper, so killing a run kills its whole tree
(process_tree.kill_tree), processes that left the group with `setsid` included, then the group.

The entrypoint starts in a new session (so its process group holds everything it starts), with its
stdin on /dev/null and its stdout and stderr on pipes, as `spec.user` when one is given (no supplementary
groups). With `spec.fence` it gets the read end of a pipe whose only write end this handle holds, named by
`STALWART_FENCE_FD` (agent/fencing.py, harness/fence.py); the write end closes when the run has ended, or with
the agent. Its `ProcessRecord` (`<work root>/<allocation id>/process.json`) names the group and when it began,
so a restarted agent kills what outlived its predecessor. Mounts and shm size are no-ops here (a process sees
the host's file system and /dev/shm), and an image is refused.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from typing import IO

from stalwart.agent.fencing import FENCE_FD_ENV, RECORD_NAME, ProcessRecord, kill_recorded
from stalwart.agent.launchers.base import Launched, Launcher, LaunchError, LaunchSpec, Started, Stream
from stalwart.process_tree import kill_tree

PUMP_READ = 64 * 1024  # bytes read from a run's stdout/stderr at a time (whatever has arrived, up to this)


class LaunchedProcess(Launched):
    """A started process group; `wait()` kills what is left of the group, closes the fence, removes the record."""

    def __init__(self, proc: subprocess.Popen[bytes], fence_fd: int | None, record: ProcessRecord) -> None:
        self._proc = proc
        self.pid = proc.pid
        self.id = str(proc.pid)
        self._fence_fd = fence_fd  # our end of the entrypoint's watchdog pipe: open while it may run
        self._record = record
        self._lock = threading.Lock()
        self._exit_code: int | None = None

    def output(self, stream: Stream) -> Iterator[bytes]:
        pipe: IO[bytes] | None = self._proc.stdout if stream == "stdout" else self._proc.stderr
        assert pipe is not None and hasattr(pipe, "read1")
        try:
            while chunk := pipe.read1(PUMP_READ):
                yield chunk
        finally:
            pipe.close()

    def signal(self, sig: int) -> None:
        with self._lock:
            if self._proc.poll() is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._proc.pid, sig)

    def kill(self) -> None:
        with self._lock:
            if self._proc.poll() is not None:
                return
            kill_tree(self._proc.pid)  # the launcher's tree: what left the group with setsid too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)

    def wait(self) -> int:
        if self._exit_code is not None:
            return self._exit_code
        code = self._proc.wait()
        # nothing the run started may outlive it (no orphan keeps training beside a restart)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        with self._lock:
            if self._fence_fd is not None:
                os.close(self._fence_fd)
                self._fence_fd = None
        self._record.remove()
        self._exit_code = code
        return code


class ProcessLauncher(Launcher):
    """Runs each allocation as a process group on this machine (the agent's default)."""

    name = "process"

    def start(self, spec: LaunchSpec) -> LaunchedProcess:
        if spec.image is not None:
            raise LaunchError(f"the process launcher cannot run image {spec.image}: it starts processes on the "
                              "agent's machine; run an agent with a container runtime for images")
        record = ProcessRecord(self.work_root / spec.allocation_id)
        record.path.parent.mkdir(parents=True, exist_ok=True)
        env, user = dict(spec.env), spec.user
        fence_fd: int | None = None
        pass_fds: tuple[int, ...] = ()
        if spec.fence:
            read_fd, fence_fd = os.pipe()
            env[FENCE_FD_ENV] = str(read_fd)
            pass_fds = (read_fd,)
        try:
            proc = subprocess.Popen(
                list(spec.argv), cwd=spec.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True, pass_fds=pass_fds,
                user=user.uid if user else None, group=user.gid if user else None,  # as the task's OS user,
                extra_groups=[] if user else None,  # without supplementary groups
            )
        except BaseException:
            if fence_fd is not None:
                os.close(fence_fd)
            raise
        finally:
            for fd in pass_fds:
                os.close(fd)
        record.write(proc.pid)  # a restarted agent kills this group if it still runs
        return LaunchedProcess(proc, fence_fd, record)

    def list_started(self) -> list[Started]:
        started = []
        for path in sorted(self.work_root.glob(f"*/{RECORD_NAME}")):
            record = ProcessRecord(path.parent)
            rec = record.read()
            if rec is not None and record.alive():
                started.append(Started(path.parent.name, str(rec["pgid"])))
        return started

    def remove_survivors(self, timeout: float = 10.0) -> list[str]:
        return kill_recorded(self.work_root, timeout)
