"""Messages to the master that must arrive (exits, log lines), resent until the master takes them."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stalwart.agent.log_buffer import DEFAULT_BLOCK_TIMEOUT, DEFAULT_MAX_BYTES, EVERY, Every, Line, LogBuffer, Meta
from stalwart.api.errors import MasterUnavailable, StalwartError
from stalwart.client import Client

log = logging.getLogger(__name__)

# One POST to /task/logs: at most this many lines and about this much line text (a SQLite master inserts a
# batch on its event loop: this keeps each insert to tens of milliseconds).
BATCH_LINES = 5_000
BATCH_BYTES = 1024 * 1024


def runs_of(batch: list[Line]) -> list[dict[str, Any]]:
    """Buffered lines as the master takes them: runs of consecutive lines sharing their fields (a stream),
    each {allocation_id, trial_id, ..., lines: [[timestamp, text], ...]}, in the order the lines came."""
    runs: list[dict[str, Any]] = []
    current = None
    lines: list[tuple[float, str]] = []
    for meta, ts, text, _size in batch:
        if meta is not current:
            current, lines = meta, []
            runs.append({**meta, "lines": lines})
        lines.append((ts, text))
    return runs


class LogShipper(threading.Thread):
    """Collects log lines from every process and posts them in batches; keeps them while the master is away.

    Lines wait in a `LogBuffer` (bounded per allocation: a full one blocks the trial's output, then drops
    with a marker). This thread is its only consumer: it posts the oldest lines and removes exactly those
    once the master has stored them."""

    def __init__(self, client: Client, agent_id: str, interval: float = 0.2, *,
                 max_bytes: int = DEFAULT_MAX_BYTES, block_timeout: float = DEFAULT_BLOCK_TIMEOUT) -> None:
        super().__init__(daemon=True, name="log-shipper")
        self.client = client
        self.agent_id = agent_id
        self.interval = interval
        self._wake = threading.Event()
        self.buffer = LogBuffer(max_bytes, block_timeout, on_full=self._wake.set)

    def add(self, entry: dict[str, Any]) -> bool:
        """Queue one line given as a dict (blocks while its allocation's buffer is full); False if dropped."""
        return self.buffer.add(entry)

    def add_lines(self, meta: Meta, lines: list[tuple[float, str]]) -> int:
        """Queue (timestamp, text) lines of one stream (`meta`: see log_buffer.META_KEYS); how many were kept."""
        return self.buffer.add_lines(meta, lines)

    def flush(self, timeout: float = 10.0, allocation_id: str | None | Every = EVERY) -> bool:
        """Wait until the master has the buffered lines of `allocation_id` (default: all); False once it has
        taken none for `timeout` seconds."""
        self._wake.set()
        return self.buffer.wait_empty(timeout, allocation_id)

    def run(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            while True:
                batch = self.buffer.take(BATCH_LINES, BATCH_BYTES)
                if not batch:
                    break
                try:
                    self.client.ship_logs(runs_of(batch))
                except (MasterUnavailable, StalwartError) as err:
                    log.debug("log shipping failed, keeping %d lines: %s", len(batch), err)
                    time.sleep(1.0)
                    break
                self.buffer.ack(batch)


@dataclass(frozen=True)
class AllocationStarted:
    """'This allocation's process runs, with this pid.'"""

    allocation_id: str
    agent_id: str
    pid: int | None

    def deliver(self, client: Client) -> None:
        client.allocation_started(self.allocation_id, agent_id=self.agent_id, pid=self.pid)

    def __str__(self) -> str:
        return f"the start of allocation {self.allocation_id}"


@dataclass(frozen=True)
class AllocationExited:
    """'This allocation's process has ended' (`agent_lost`: the agent killed it for lack of the master;
    `setup_failed`: it never ran, its container could not be set up: the image could not be pulled or cannot run
    the harness, which is not the user's code failing and uses up no restart)."""

    allocation_id: str
    agent_id: str
    exit_code: int | None
    agent_lost: bool = False
    setup_failed: bool = False

    def deliver(self, client: Client) -> None:
        client.allocation_exited(self.allocation_id, agent_id=self.agent_id, exit_code=self.exit_code,
                                 agent_lost=self.agent_lost, setup_failed=self.setup_failed)

    def __str__(self) -> str:
        return f"the exit of allocation {self.allocation_id}"


Message = AllocationStarted | AllocationExited


class Outbox(threading.Thread):
    """Ordered, at-least-once delivery of messages such as 'allocation exited'."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True, name="outbox")
        self.client = client
        self._items: deque[tuple[Message, Callable[[], object] | None]] = deque()
        self._cv = threading.Condition()

    def send(self, message: Message, before: Callable[[], object] | None = None) -> None:
        """Queue a message; `before` runs right before each attempt to deliver it (e.g. flush logs)."""
        with self._cv:
            self._items.append((message, before))
            self._cv.notify()

    def pending(self) -> int:
        with self._cv:
            return len(self._items)

    def undelivered_exits(self) -> list[str]:
        """The allocations whose exit the master has not been told of yet, oldest first."""
        with self._cv:
            return [m.allocation_id for m, _before in self._items if isinstance(m, AllocationExited)]

    def run(self) -> None:
        while True:
            with self._cv:
                while not self._items:
                    self._cv.wait()
                message, before = self._items[0]
            if before is not None:
                before()
            try:
                message.deliver(self.client)
            except MasterUnavailable:
                time.sleep(1.0)
                continue
            except StalwartError as err:
                if err.http_status >= 500:  # the master could not take it now (e.g. its database restarts)
                    log.warning("master failed to take %s, will retry: %s", message, err)
                    time.sleep(1.0)
                    continue
                log.warning("master refused %s: %s", message, err)
            with self._cv:
                self._items.popleft()
