"""/api/v1/trials: describe, kill, logs (follow), metrics, and the calls a running trial makes."""

from __future__ import annotations

import asyncio
import json

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from stalwart.api.states import AllocationState as A
from stalwart.config import views as cviews
from stalwart.db import tables as t
from stalwart.master import views
from stalwart.master.experiments import intake, trials
from stalwart.master.logs import read_logs
from stalwart.master.routes.common import allocation_of, body, master
from stalwart.master.service import Master

router = APIRouter(prefix="/api/v1/trials", tags=["trials"])


@router.get("/{trial_id}")
async def describe(request: Request, trial_id: int) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        row = Master.get_row(conn, t.trials, trial_id, "trial")
        runs = conn.execute(
            sa.select(t.allocations).where(t.allocations.c.trial_id == trial_id).order_by(t.allocations.c.created_at)
        ).mappings().all()
        latest = trials.latest_checkpoint(conn, trial_id)
        summary = views.trial_summaries(conn, [trial_id])[trial_id]
    return {
        "trial": views.trial(row, summary),
        "runs": [views.allocation(r) for r in runs],
        "latest_checkpoint": views.checkpoint(latest) if latest else None,
    }


@router.post("/{trial_id}/kill")
async def kill(request: Request, trial_id: int) -> dict:
    trials.kill_trial(master(request), trial_id)
    return {}


@router.get("/{trial_id}/checkpoints")
async def checkpoints(request: Request, trial_id: int) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        Master.get_row(conn, t.trials, trial_id, "trial")
        rows = conn.execute(
            sa.select(t.checkpoints).where(t.checkpoints.c.trial_id == trial_id).order_by(t.checkpoints.c.steps_completed)
        ).mappings().all()
    return {"checkpoints": [views.checkpoint(r) for r in rows]}


@router.get("/{trial_id}/metrics")
async def metrics(request: Request, trial_id: int, group: str | None = None, after_steps: int = -1,
                  limit: int = 100000) -> dict:
    m = master(request)
    q = sa.select(t.metrics).where(t.metrics.c.trial_id == trial_id, t.metrics.c.steps_completed > after_steps)
    if group:
        q = q.where(t.metrics.c.group_name == group)
    with m.db.begin() as conn:
        Master.get_row(conn, t.trials, trial_id, "trial")
        rows = conn.execute(q.order_by(t.metrics.c.steps_completed).limit(limit)).mappings().all()
    return {"metrics": [
        {"group": r["group_name"], "steps_completed": r["steps_completed"], "metrics": r["metrics"],
         "trial_run_id": r["trial_run_id"], "report_time": r["report_time"]} for r in rows
    ]}


def _trial_open(m: Master, trial_id: int) -> bool:
    with m.db.begin() as conn:
        row = Master.get_row(conn, t.trials, trial_id, "trial")
        live = conn.execute(
            sa.select(sa.func.count()).select_from(t.allocations).where(
                t.allocations.c.trial_id == trial_id, t.allocations.c.state != A.TERMINATED.value)
        ).scalar()
    return row["state"] in ("ACTIVE", "PAUSED") or row["state"].startswith("STOPPING") or live > 0


def _log_block(m: Master, trial_id: int, after_id: int) -> tuple[int, str]:
    """The next stored lines after `after_id` as NDJSON text, and the id of the last of them."""
    with m.db.begin() as conn:
        rows = read_logs(conn, trial_id, after_id)
    return (rows[-1]["id"] if rows else after_id), "".join(json.dumps(r) + "\n" for r in rows)


@router.get("/{trial_id}/logs")
async def logs(request: Request, trial_id: int, follow: bool = False, after_id: int = 0) -> StreamingResponse:
    """Newline-delimited JSON log entries; with follow=true, stays open until the trial ends."""
    m = master(request)
    with m.db.begin() as conn:
        Master.get_row(conn, t.trials, trial_id, "trial")

    async def stream():
        last = after_id
        while True:
            still_open = follow and _trial_open(m, trial_id)
            # read and encode in a worker thread, a block at a time: a long log does not hold up the event loop
            last, text = await run_in_threadpool(_log_block, m, trial_id, last)
            if text:
                yield text
                continue
            if not still_open:
                return
            if await request.is_disconnected():
                return
            await asyncio.sleep(0.25)

    return StreamingResponse(stream(), media_type="application/x-ndjson")


# --- calls made from inside the trial, with its allocation token ------------------------------

@router.post("/{trial_id}/metrics")
async def report_metrics(request: Request, trial_id: int) -> dict:
    m, allocation_id = allocation_of(request)
    rows = intake.parse_reports(trial_id, await body(request))
    with m.db.begin() as conn:
        intake.caller_allocation(conn, allocation_id, trial_id)
    await request.app.state.metrics_writer.submit(rows)
    return {"accepted": len(rows)}


@router.post("/{trial_id}/progress")
async def report_progress(request: Request, trial_id: int) -> dict:
    m, allocation_id = allocation_of(request)
    intake.set_progress(m, allocation_id, trial_id, (await body(request)).get("progress"))
    return {}


@router.post("/{trial_id}/early_exit")
async def report_early_exit(request: Request, trial_id: int) -> dict:
    m, allocation_id = allocation_of(request)
    intake.early_exit(m, allocation_id, trial_id, str((await body(request)).get("reason")))
    return {}


@router.get("/{trial_id}/searcher/operation")
async def searcher_operation(request: Request, trial_id: int) -> dict:
    """The length this trial should train to, in the searcher's configured unit."""
    m, allocation_id = allocation_of(request)
    with m.db.begin() as conn:
        intake.caller_allocation(conn, allocation_id, trial_id)
        trial = Master.get_row(conn, t.trials, trial_id, "trial")
        exp = Master.get_row(conn, t.experiments, trial["experiment_id"], "experiment")
    length = cviews.max_length(exp["config"])
    return {
        "length": trial["target_length"],
        "unit": length.unit if length else None,
        "completed": bool(trial["stop_requested"]),
    }
