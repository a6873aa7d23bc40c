"""A started container: its two output streams, signal, kill, and a wait that leaves nothing of it behind.

The launcher attaches to the container before starting it, so no output is lost; one thread reads the
engine's multiplexed attach stream (8-byte frame headers naming stdout or stderr) and hands each chunk to its
stream's queue as it arrives. `wait()` waits for the engine's exit code, reads the streams to their end,
removes the container, and only then closes the fence: the watchdog (`watchdog.py`) that holds its other end
finds nothing left to remove. A container removed by someone else while it ran (a restarted agent's
`remove_survivors`) was killed: -9.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

from stalwart.agent.launchers.base import Launched, Stream

STREAM_END_TIMEOUT = 30.0  # seconds the streams may take to end once the container has exited
OUTPUT_QUEUE_CHUNKS = 256  # chunks read from the engine and not yet taken, per stream, before reading waits
SIGNAL_LIMIT = 64  # an engine exit code 128 + N with N up to this is a death by signal N


def exit_code(engine_status: int) -> int:
    """The engine's exit status as the agent reports it: 128 + N (the init's report of signal N) is -N."""
    return -(engine_status - 128) if 128 < engine_status <= 128 + SIGNAL_LIMIT else engine_status


def _missing(err: BaseException) -> bool:
    """Whether an engine error says the container is gone or not running (so there is nothing to do)."""
    status = getattr(getattr(err, "response", None), "status_code", None)
    return status in (404, 409)


class Fence:
    """Our end of a container's watchdog pipe, and the watchdog process on the other end."""

    def __init__(self, write_fd: int, watchdog: subprocess.Popen[bytes]) -> None:
        self._write_fd: int | None = write_fd
        self._watchdog = watchdog

    def release(self) -> None:
        """Close our end (the watchdog then finds the container gone and exits) and reap the watchdog."""
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watchdog.wait(timeout=10)


class LaunchedContainer(Launched):
    """A started container; `api` is the launcher's docker.APIClient, `attach` the attached socket."""

    def __init__(self, api: Any, container_id: str, pid: int, attach: Any, fence: Fence | None) -> None:
        self._api = api
        self.id = container_id
        self.pid = pid
        self._fence = fence
        # bounded: while the agent's log buffer is full (back-pressure), reading the engine's stream stops too
        self._queues: dict[str, queue.Queue[bytes | None]] = {"stdout": queue.Queue(OUTPUT_QUEUE_CHUNKS),
                                                              "stderr": queue.Queue(OUTPUT_QUEUE_CHUNKS)}
        self._pump = threading.Thread(target=self._demux, args=(attach,), name=f"attach-{container_id[:12]}",
                                      daemon=True)
        self._pump.start()
        self._lock = threading.Lock()  # a signal and the run's end, one at a time
        self._waiting = threading.Lock()  # one wait() asks the engine; others get its answer
        self._ended = False
        self._exit_code: int | None = None

    def _demux(self, attach: Any) -> None:
        from docker.utils.socket import STDERR, frames_iter

        raw = getattr(attach, "_sock", attach)
        try:
            raw.settimeout(None)  # a quiet run is not a dead one
            for stream, chunk in frames_iter(attach, tty=False):
                self._queues["stderr" if stream == STDERR else "stdout"].put(chunk)
        except OSError:
            pass  # the connection ended with the container
        finally:
            for q in self._queues.values():
                q.put(None)
            with contextlib.suppress(OSError):
                raw.close()

    def output(self, stream: Stream) -> Iterator[bytes]:
        q = self._queues[stream]
        while (chunk := q.get()) is not None:
            yield chunk

    def signal(self, sig: int) -> None:
        from docker.errors import APIError

        with self._lock:
            if self._ended:
                return
            try:
                self._api.kill(self.id, signal=int(sig))
            except APIError as err:
                if not _missing(err):
                    raise

    def kill(self) -> None:
        self.signal(signal.SIGKILL)

    def wait(self) -> int:
        from docker.errors import APIError

        with self._waiting:
            if self._exit_code is not None:
                return self._exit_code
            try:
                status = int(self._api.wait(self.id, timeout=None)["StatusCode"])
            except APIError as err:
                if not _missing(err) and self._exists():
                    raise
                status = 128 + signal.SIGKILL  # removed while it ran: killed
            with self._lock:
                self._ended = True
            self._pump.join(STREAM_END_TIMEOUT)
            self._remove()
            if self._fence is not None:
                self._fence.release()
            self._exit_code = exit_code(status)
            return self._exit_code

    def _exists(self) -> bool:
        from docker.errors import NotFound

        try:
            self._api.inspect_container(self.id)
        except NotFound:
            return False
        return True

    def _remove(self) -> None:
        from docker.errors import APIError

        try:
            self._api.remove_container(self.id, force=True)
        except APIError as err:
            if not _missing(err):
                raise
