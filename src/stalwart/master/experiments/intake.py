"""What trial processes report: metrics (group-committed in batches), checkpoints, progress, early exits."""

from __future__ import annotations

import asyncio
import logging
import uuid as uuidlib
from typing import Any

from stalwart.api.errors import ForbiddenError, InvalidRequest, InvalidStateError
from stalwart.api.states import AllocationState as A, ExitReason
from stalwart.master.experiments import searching
from stalwart.master.experiments.metric_reports import (
    parse_reports as parse_reports,  # the routes' and tests' entry point
)
from stalwart.master.queries import (
    allocations as allocation_rows,
    checkpoints as checkpoint_rows,
    experiments as experiment_rows,
    metrics as metric_rows,
    runs,
    trials as trial_rows,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, now

log = logging.getLogger(__name__)

MAX_BATCH_ROWS = 20000


def caller_allocation(conn: Conn, allocation_id: str, trial_id: int) -> Row:
    """The caller's allocation, which must be live and belong to `trial_id`."""
    alloc = runs.find(conn, allocation_id)
    if alloc is None or alloc["trial_id"] != trial_id:
        raise ForbiddenError(f"this allocation token does not belong to trial {trial_id}")
    if alloc["state"] == A.TERMINATED.value:
        raise InvalidStateError(f"allocation {allocation_id} has ended; its reports are no longer accepted")
    return alloc


class MetricsWriter:
    """Group commit: every report waiting at flush time goes into one transaction, then all are acknowledged.

    Reports are validated before they are queued (metric_reports.parse_reports). Should a group commit
    fail all the same, each request's rows are written again on their own, so that only the request
    whose rows cannot be stored fails and every other request in the group is stored and acknowledged.
    """

    def __init__(self, m: Master) -> None:
        self.m = m
        self.queue: asyncio.Queue[tuple[list[dict[str, Any]], asyncio.Future[None]]] = asyncio.Queue()

    async def submit(self, rows: list[dict[str, Any]]) -> None:
        fut = asyncio.get_running_loop().create_future()
        await self.queue.put((rows, fut))
        await fut

    async def run_forever(self) -> None:
        while True:
            batch = [await self.queue.get()]
            size = len(batch[0][0])
            while size < MAX_BATCH_ROWS and not self.queue.empty():
                item = self.queue.get_nowait()
                batch.append(item)
                size += len(item[0])
            self.commit(batch)

    def commit(self, batch: list[tuple[list[dict[str, Any]], asyncio.Future[None]]]) -> None:
        """Write a batch of (rows, future) in one transaction, else each alone; settle every future."""
        try:
            self._write([r for rows, _ in batch for r in rows])
        except Exception as err:
            if len(batch) == 1:
                log.exception("metrics write failed")
                _settle(batch[0][1], err)
                return
            log.warning("group commit of %d metric requests failed (%s); writing each request alone", len(batch), err)
            for rows, fut in batch:
                try:
                    self._write(rows)
                except Exception as one_err:
                    log.exception("metrics write of one request (%d rows) failed", len(rows))
                    _settle(fut, one_err)
                else:
                    _settle(fut, None)
            return
        for _, fut in batch:
            _settle(fut, None)

    def _write(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        with self.m.db.begin() as conn:
            metric_rows.upsert(conn, rows)
            self._feed_searcher(conn, rows)

    def _feed_searcher(self, conn: Conn, rows: list[dict[str, Any]]) -> None:
        validations = [r for r in rows if r["group_name"] == "validation"]
        for r in sorted(validations, key=lambda r: (r["trial_id"], r["steps_completed"])):
            trial = trial_rows.get(conn, r["trial_id"])
            searching.on_validation(self.m, conn, dict(trial), r["steps_completed"], r["metrics"])


def _settle(fut: asyncio.Future[None], err: Exception | None) -> None:
    if fut.done():  # the request was cancelled (its client went away)
        return
    if err is None:
        fut.set_result(None)
    else:
        fut.set_exception(err)


def register_checkpoint(m: Master, allocation_id: str, body: dict[str, Any]) -> dict[str, Any]:
    trial_id = body.get("trial_id")
    if not isinstance(trial_id, int):
        raise InvalidRequest("trial_id: required")
    raw_uuid = str(body.get("uuid") or "")
    try:
        ckpt_uuid = str(uuidlib.UUID(raw_uuid))
    except ValueError:
        raise InvalidRequest(f"uuid: expected a UUID, got {raw_uuid!r}") from None
    metadata = body.get("metadata") or {}
    steps = metadata.get("steps_completed") if isinstance(metadata, dict) else None
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise InvalidRequest("metadata.steps_completed: required, an integer >= 0 (every checkpoint must say how "
                             "many steps it holds, so that a trial can resume from it)")
    resources = body.get("resources") or {}
    if not isinstance(resources, dict):
        raise InvalidRequest("resources: expected an object of relative path to size")
    with m.db.begin() as conn:
        caller_allocation(conn, allocation_id, trial_id)
        trial = trial_rows.get(conn, trial_id)
        exp = experiment_rows.get(conn, trial["experiment_id"])
        if checkpoint_rows.exists(conn, ckpt_uuid):
            raise InvalidStateError(f"checkpoint {ckpt_uuid} is already registered")
        row = dict(
            uuid=ckpt_uuid,
            trial_id=trial_id,
            allocation_id=allocation_id,
            steps_completed=steps,
            state="COMPLETED",
            resources={str(k): int(v) for k, v in resources.items()},
            metadata=metadata,
            storage=exp["config"]["checkpoint_storage"],
            report_time=now(),
        )
        checkpoint_rows.insert(conn, row)
    return row


def set_progress(m: Master, allocation_id: str, trial_id: int, progress: object) -> None:
    if not isinstance(progress, (int, float)) or not 0 <= progress <= 1:
        raise InvalidRequest(f"progress: expected a number in 0..1, got {progress!r}")
    with m.db.begin() as conn:
        caller_allocation(conn, allocation_id, trial_id)
        trial = trial_rows.get(conn, trial_id)
        trial_rows.set_progress(conn, trial_id, float(progress))
        searching.refresh_progress(m, conn, trial["experiment_id"])


def early_exit(m: Master, allocation_id: str, trial_id: int, reason: str) -> None:
    known = {
        "EXITED_REASON_INVALID_HP": ExitReason.INVALID_HP, "INVALID_HP": ExitReason.INVALID_HP,
        "EXITED_REASON_USER_REQUESTED_STOP": ExitReason.USER_REQUESTED_STOP,
        "USER_REQUESTED_STOP": ExitReason.USER_REQUESTED_STOP,
    }
    if reason not in known:
        raise InvalidRequest(f"reason: expected one of {sorted(known)}, got {reason!r}")
    with m.db.begin() as conn:
        caller_allocation(conn, allocation_id, trial_id)
        trial = trial_rows.get(conn, trial_id)
        if trial["early_exit"]:
            raise InvalidStateError(f"trial {trial_id} already reported an early exit")
        trial_rows.set_early_exit(conn, trial_id, known[reason].value)


def ack_preemption(m: Master, allocation_id: str) -> None:
    with m.db.begin() as conn:
        runs.ack_preemption(conn, allocation_id)


def preemption_requested(m: Master, allocation_id: str) -> bool:
    with m.db.begin() as conn:
        alloc = allocation_rows.get(conn, allocation_id)
        return bool(alloc["preempt_requested"] or alloc["kill_requested"] or alloc["state"] == A.TERMINATED.value)
