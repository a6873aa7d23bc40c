"""/api/v1/trials: describe, kill, logs (follow), metrics, and the calls a running trial makes."""

from __future__ import annotations

import asyncio
import datetime
import json
import math
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.allocations import Allocation
from stalwart.api.models.checkpoints import Checkpoint, CheckpointList
from stalwart.api.models.common import MAX_ID, Empty
from stalwart.api.models.trials import (
    Accepted,
    LogPolicyMatch,
    MetricList,
    MetricPoint,
    ReportEarlyExit,
    ReportProgress,
    SearcherOperation,
    Trial,
    TrialDetail,
)
from stalwart.api.states import LOG_LEVELS
from stalwart.config import views as cviews
from stalwart.master import views
from stalwart.master.experiments import intake, trials
from stalwart.master.logs import read_logs, tail_start
from stalwart.master.queries import (
    checkpoints as checkpoint_rows,
    experiments as experiment_rows,
    log_policies as policy_rows,
    metrics as metric_rows,
    runs,
    trials as trial_rows,
)
from stalwart.master.queries.logs import LogFilter
from stalwart.master.routes.common import AfterId, IdPath, Limit, body, master
from stalwart.master.routes.contract import route
from stalwart.master.service import Master

router = APIRouter(prefix="/api/v1/trials", tags=["trials"])

GroupQuery = Annotated[str | None, Query(max_length=64, description="only reports of this group")]
Levels = Annotated[list[str] | None, Query(max_length=len(LOG_LEVELS), description="only these levels (repeat the key "
                                                                              "or separate with commas)")]
Since = Annotated[str | None, Query(max_length=64, description="only lines at or after this time: epoch seconds or "
                                                               "ISO 8601 (e.g. 2026-01-02T03:04:05Z)")]
Grep = Annotated[str | None, Query(max_length=1024, description="only lines containing this text")]
LineCount = Annotated[int | None, Query(ge=1, le=MAX_ID, description="a number of lines")]
AfterSteps = Annotated[int, Query(ge=-1, le=MAX_ID, description="only reports with more steps_completed than this")]


@route(router, "GET", "/{trial_id}")
async def describe(request: Request, trial_id: IdPath) -> TrialDetail:
    m = master(request)
    with m.db.begin() as conn:
        row = trial_rows.get(conn, trial_id)
        trial_runs = runs.of_trial(conn, trial_id)
        latest = trials.latest_checkpoint(conn, trial_id)
        summary = views.trial_summaries(conn, [trial_id])[trial_id]
        matches = policy_rows.of_trial(conn, trial_id)
    return TrialDetail(
        trial=Trial.model_validate(views.trial(row, summary)),
        runs=[Allocation.model_validate(views.allocation(r)) for r in trial_runs],
        latest_checkpoint=Checkpoint.model_validate(views.checkpoint(latest)) if latest else None,
        log_policy_matches=[LogPolicyMatch.model_validate({k: v for k, v in r.items() if k not in ("id", "trial_id")})
                            for r in matches],
    )


@route(router, "POST", "/{trial_id}/kill")
async def kill(request: Request, trial_id: IdPath) -> Empty:
    trials.kill_trial(master(request), trial_id)
    return Empty()


@route(router, "GET", "/{trial_id}/checkpoints")
async def checkpoints(request: Request, trial_id: IdPath) -> CheckpointList:
    m = master(request)
    with m.db.begin() as conn:
        trial_rows.get(conn, trial_id)
        rows = checkpoint_rows.of_trial(conn, trial_id)
    return CheckpointList(checkpoints=[Checkpoint.model_validate(views.checkpoint(r)) for r in rows])


@route(router, "GET", "/{trial_id}/metrics")
async def metrics(request: Request, trial_id: IdPath, group: GroupQuery = None, after_steps: AfterSteps = -1,
                  limit: Limit = 100000) -> MetricList:
    m = master(request)
    with m.db.begin() as conn:
        trial_rows.get(conn, trial_id)
        rows = metric_rows.page(conn, trial_id, group=group, after_steps=after_steps, limit=limit)
    return MetricList(metrics=[
        MetricPoint(group=r["group_name"], steps_completed=r["steps_completed"], metrics=r["metrics"],
                    trial_run_id=r["trial_run_id"], report_time=r["report_time"]) for r in rows
    ])


def trial_open(m: Master, trial_id: int) -> bool:
    """May the trial still log: not ended yet, or a run of it still live (a log follow keeps going while so)."""
    with m.db.begin() as conn:
        row = trial_rows.get(conn, trial_id)
        live = runs.count_live_of_trial(conn, trial_id)
    return row["state"] in ("ACTIVE", "PAUSED") or row["state"].startswith("STOPPING") or live > 0


def _log_block(m: Master, trial_id: int, after_id: int, where: LogFilter,
               limit: int = 5000) -> tuple[int, int, str]:
    """The next matching lines after `after_id` as NDJSON text, the id of the last of them, and how many."""
    with m.db.begin() as conn:
        rows = read_logs(conn, trial_id, after_id, limit, where)
    return (rows[-1]["id"] if rows else after_id), len(rows), "".join(json.dumps(r) + "\n" for r in rows)


def _levels(values: list[str] | None) -> tuple[str, ...]:
    levels = tuple(dict.fromkeys(p.strip().upper() for v in values or [] for p in v.split(",") if p.strip()))
    for level in levels:
        if level not in LOG_LEVELS:
            raise InvalidRequest(f"levels: unknown log level '{level}'; use any of {', '.join(LOG_LEVELS)}")
    return levels


def _since(text: str | None) -> float | None:
    """Epoch seconds, or an ISO 8601 time (UTC when it names no zone)."""
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            moment = datetime.datetime.fromisoformat(text.strip())
        except ValueError:
            raise InvalidRequest(f"since: '{text}' is neither epoch seconds nor an ISO 8601 time") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.UTC)
        return moment.timestamp()
    if not math.isfinite(value):
        raise InvalidRequest(f"since: '{text}' is not a finite number of seconds")
    return value


@route(router, "GET", "/{trial_id}/logs")
async def logs(request: Request, trial_id: IdPath, follow: bool = False, after_id: AfterId = 0,
               levels: Levels = None, since: Since = None, grep: Grep = None, head: LineCount = None,
               tail: LineCount = None) -> StreamingResponse:
    """Newline-delimited JSON log entries; with follow=true, stays open until the trial ends. Filtered in the
    query: any of `levels`, at or after `since`, containing `grep`; then only the first `head` or the last `tail`
    lines (not both at once; `head` not with follow; `tail` with follow: the last lines, then the new ones)."""
    if follow and head is not None:
        raise InvalidRequest("head: cannot be combined with follow=true (tail can: the last lines, then new ones)")
    if head is not None and tail is not None:
        raise InvalidRequest("head, tail: give one of them, not both")
    where = LogFilter(levels=_levels(levels), since=_since(since), grep=grep or None)
    m = master(request)
    with m.db.begin() as conn:
        trial_rows.get(conn, trial_id)
        start = tail_start(conn, trial_id, after_id, tail, where) if tail is not None else after_id

    async def stream() -> AsyncIterator[str]:
        last, left = start, head
        while left is None or left > 0:
            still_open = follow and trial_open(m, trial_id)
            # read and encode in a worker thread, a block at a time: a long log does not hold up the event loop
            block = 5000 if left is None else min(5000, left)
            last, count, text = await run_in_threadpool(_log_block, m, trial_id, last, where, block)
            if text:
                left = None if left is None else left - count
                yield text
                continue
            if not still_open:
                return
            if await request.is_disconnected():
                return
            await asyncio.sleep(0.25)

    return StreamingResponse(stream(), media_type="application/x-ndjson")


# --- calls made from inside the trial, with its allocation token (checked by `route`) ------------

def _caller(request: Request) -> str:
    """The allocation id of the token the `route` dependency checked."""
    return str(request.state.allocation_id)


@route(router, "POST", "/{trial_id}/metrics", parses_body=True)
async def report_metrics(request: Request, trial_id: IdPath) -> Accepted:
    """Hot path: the body is checked by metric_reports.parse_reports (the same bodies ReportMetrics accepts)."""
    m = master(request)
    rows = intake.parse_reports(trial_id, await body(request))
    with m.db.begin() as conn:
        intake.caller_allocation(conn, _caller(request), trial_id)
    await request.app.state.metrics_writer.submit(rows)
    return Accepted(accepted=len(rows))


@route(router, "POST", "/{trial_id}/progress")
async def report_progress(request: Request, trial_id: IdPath, payload: ReportProgress) -> Empty:
    intake.set_progress(master(request), _caller(request), trial_id, payload.progress)
    return Empty()


@route(router, "POST", "/{trial_id}/early_exit")
async def report_early_exit(request: Request, trial_id: IdPath, payload: ReportEarlyExit) -> Empty:
    intake.early_exit(master(request), _caller(request), trial_id, payload.reason)
    return Empty()


@route(router, "GET", "/{trial_id}/searcher/operation")
async def searcher_operation(request: Request, trial_id: IdPath) -> SearcherOperation:
    """The length this trial should train to, in the searcher's configured unit."""
    m = master(request)
    with m.db.begin() as conn:
        intake.caller_allocation(conn, _caller(request), trial_id)
        trial = trial_rows.get(conn, trial_id)
        exp = experiment_rows.get(conn, trial["experiment_id"])
    length = cviews.max_length(exp["config"])
    # the unit is checked against the model's (config.lengths.LENGTH_UNITS: batches, records, epochs) as it is built
    return SearcherOperation.model_validate({"length": trial["target_length"], "unit": length.unit if length else None,
                                             "completed": bool(trial["stop_requested"])})
