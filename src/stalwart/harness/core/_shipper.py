"""Background metric shipping: reports are queued, sent in batches, and resent until the master accepts them."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypedDict

from stalwart.api.errors import MasterUnavailable, StalwartError
from stalwart.client import Client

log = logging.getLogger("stalwart.core")

MAX_REPORTS = 5000
MAX_POINTS = 50_000  # metric values per POST, so wide reports don't make giant requests


class Report(TypedDict):
    """One metrics report, as the master's trials API takes it (metric values already JSON-ready)."""

    group: str
    steps_completed: int
    metrics: dict[str, Any]
    trial_run_id: int
    report_time: float


class MetricShipper(threading.Thread):
    """The thread that sends queued reports to the master, in batches, in order."""

    def __init__(self, client: Client, trial_id: int, max_pending: int = 1_000_000,
                 on_sent: Callable[[list[Report]], None] | None = None) -> None:
        super().__init__(daemon=True, name="metric-shipper")
        self.client = client
        self.trial_id = trial_id
        self.max_pending = max_pending
        self._q: deque[Report] = deque()
        self._cv = threading.Condition()
        self._inflight = 0
        self._error: StalwartError | None = None
        self._closed = False
        self._on_sent = on_sent  # called with each acknowledged batch, in this thread (e.g. TensorBoard files)

    def put(self, report: Report) -> None:
        self.raise_error()
        with self._cv:
            while len(self._q) >= self.max_pending:
                self._cv.wait(0.1)
            self._q.append(report)
            self._cv.notify_all()

    def raise_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def flush(self) -> None:
        """Block until every queued report is acknowledged by the master (or an error is raised)."""
        with self._cv:
            while (self._q or self._inflight) and self._error is None:
                self._cv.wait(0.1)
        self.raise_error()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._cv:
                self._closed = True
                self._cv.notify_all()

    def _take(self) -> list[Report]:
        batch: list[Report] = []
        points = 0
        while self._q and len(batch) < MAX_REPORTS and (not batch or points < MAX_POINTS):
            report = self._q.popleft()
            points += len(report["metrics"])
            batch.append(report)
        return batch

    def _after_send(self, batch: list[Report]) -> None:
        if self._on_sent is None:
            return
        try:
            self._on_sent(batch)
        except Exception as err:  # noqa: BLE001 - a side channel must never stop metric shipping
            log.warning("could not write TensorBoard files: %s", err)

    def run(self) -> None:
        while True:
            with self._cv:
                while not self._q and not self._closed:
                    self._cv.wait()
                if self._closed and not self._q:
                    return
                batch = self._take()
                self._inflight = len(batch)
            try:
                self.client.report_metrics(self.trial_id, batch)
                if self._on_sent is not None:
                    self._after_send(batch)
            except MasterUnavailable as err:
                log.error("metrics could not reach the master: %s", err)
                with self._cv:
                    self._q.extendleft(reversed(batch))
                    self._error = err
            except StalwartError as err:
                log.error("the master refused metrics: %s", err)
                self._error = err
            with self._cv:
                self._inflight = 0
                self._cv.notify_all()
