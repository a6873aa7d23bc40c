"""Detached trials (docs/detached.md): a script outside the cluster makes or finds its trial and starts a run of it,
as a user who may edit the experiment; the run's token then reports for it (routes/trials.py, checkpoints.py) and
beats and ends it (routes/allocations.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from stalwart.api.models.detached import CreateDetachedTrial, DetachedRun, DetachedTrial, StartDetachedRun
from stalwart.api.models.trials import Trial
from stalwart.master import views
from stalwart.master.detached import runs
from stalwart.master.routes.common import IdPath, master
from stalwart.master.routes.contract import route

router = APIRouter(prefix="/api/v1", tags=["detached"])


@route(router, "POST", "/experiments/{exp_id}/trials")
async def create_trial(request: Request, exp_id: IdPath, payload: CreateDetachedTrial) -> DetachedTrial:
    """A new trial of the detached experiment with these hparams, or the one its external_trial_id names."""
    m = master(request)
    row = await run_in_threadpool(runs.create_or_find_trial, m, exp_id, payload.hparams, payload.external_trial_id)
    with m.db.begin() as conn:
        summary = views.trial_summaries(conn, [row["id"]])[row["id"]]
    return DetachedTrial(trial=Trial.model_validate(views.trial(row, summary)),
                         external_trial_id=runs.external_id_of(row))


@route(router, "POST", "/trials/{trial_id}/runs")
async def start_run(request: Request, trial_id: IdPath, payload: StartDetachedRun) -> DetachedRun:
    """A run of the detached trial starts now; its token is in the answer (only to this caller)."""
    return await run_in_threadpool(runs.start_run, master(request), trial_id, payload.resume)
