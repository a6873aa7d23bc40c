"""Messages to the master that must arrive (exits, log lines), resent until the master takes them."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

from stalwart.api.errors import MasterUnavailable, StalwartError
from stalwart.client import Client

log = logging.getLogger(__name__)

MAX_BUFFERED_LINES = 200_000


class LogShipper(threading.Thread):
    """Collects log lines from every process and posts them in batches; keeps them while the master is away."""

    def __init__(self, client: Client, agent_id: str, interval: float = 0.2) -> None:
        super().__init__(daemon=True, name="log-shipper")
        self.client = client
        self.agent_id = agent_id
        self.interval = interval
        self._lines: deque = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()

    def add(self, entry: dict) -> None:
        with self._lock:
            if len(self._lines) >= MAX_BUFFERED_LINES:
                self._lines.popleft()
            self._lines.append(entry)
            self._idle.clear()

    def flush(self, timeout: float = 10.0) -> bool:
        self._wake.set()
        return self._idle.wait(timeout)

    def run(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            while True:
                with self._lock:
                    batch = [self._lines[i] for i in range(min(len(self._lines), 2000))]
                if not batch:
                    self._idle.set()
                    break
                try:
                    self.client.post("/task/logs", {"logs": batch})
                except (MasterUnavailable, StalwartError) as err:
                    log.debug("log shipping failed, keeping %d lines: %s", len(batch), err)
                    time.sleep(1.0)
                    break
                with self._lock:
                    for _ in batch:
                        self._lines.popleft()


class Outbox(threading.Thread):
    """Ordered, at-least-once delivery of (method path body) calls such as 'allocation exited'."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True, name="outbox")
        self.client = client
        self._items: deque = deque()
        self._cv = threading.Condition()

    def send(self, path: str, body: dict, before=None) -> None:
        """Queue a POST; `before` (optional callable) runs right before each attempt (e.g. flush logs)."""
        with self._cv:
            self._items.append((path, body, before))
            self._cv.notify()

    def pending(self) -> int:
        with self._cv:
            return len(self._items)

    def queued_paths(self) -> list[str]:
        """The paths of the calls not yet delivered, oldest first."""
        with self._cv:
            return [path for path, _body, _before in self._items]

    def run(self) -> None:
        while True:
            with self._cv:
                while not self._items:
                    self._cv.wait()
                path, body, before = self._items[0]
            if before is not None:
                before()
            try:
                self.client.post(path, body)
            except MasterUnavailable:
                time.sleep(1.0)
                continue
            except StalwartError as err:
                log.warning("master refused %s: %s", path, err)
            with self._cv:
                self._items.popleft()
