"""/api/v1/jobs: the job queue (list in queue order, priority, weight, pool, moves) and `e set` shortcuts.

Everyone sees the whole queue, since everyone's place in it depends on the others; a job whose experiment or command
the caller may not view is shown anonymously (`limited`: its place, pool, state and slots only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from stalwart.api import permissions as P
from stalwart.api.models.jobs import Job, JobEnvelope, JobList, MoveJob, SetPool, SetPriority, SetWeight, UpdateJob
from stalwart.master.identity import authz
from stalwart.master.routes.common import IdPath, master
from stalwart.master.routes.contract import route
from stalwart.master.scheduling import jobs

router = APIRouter(prefix="/api/v1", tags=["jobs"])

JobPath = Annotated[str, Path(min_length=1, max_length=64, description="a job id")]
PoolQuery = Annotated[str | None, Query(max_length=255, description="only the jobs of this resource pool")]


LIMITED_KEYS = ("job_id", "type", "workspace_id", "state", "priority", "weight", "max_slots", "queue_position",
                "resource_pool", "slots_requested", "slots_allocated", "submitted_at")
"""What an anonymous entry of the queue shows."""


def _as_seen_by(request: Request, listed: list[dict[str, Any]]) -> list[Job]:
    """The jobs as the caller may see them: those of experiments and commands it may not view, anonymously."""
    m, ident = master(request), request.state.identity
    seen = {jobs.EXPERIMENT: authz.viewable_workspaces(m, ident, P.VIEW_EXPERIMENTS),
            jobs.COMMAND: authz.viewable_workspaces(m, ident, P.VIEW_TASKS)}
    out = []
    for job in listed:
        workspaces = seen.get(job["type"])
        if workspaces is None or job["workspace_id"] in workspaces:
            out.append(Job.model_validate(job))
        else:
            out.append(Job.model_validate({**{k: job[k] for k in LIMITED_KEYS}, "limited": True}))
    return out


@route(router, "GET", "/jobs")
async def list_jobs(request: Request, resource_pool: PoolQuery = None) -> JobList:
    return JobList(jobs=_as_seen_by(request, jobs.list_jobs(master(request), resource_pool)))


@route(router, "GET", "/jobs/{job_id}")
async def get_job(request: Request, job_id: JobPath) -> JobEnvelope:
    return JobEnvelope(job=_as_seen_by(request, [jobs.get_job(master(request), job_id)])[0])


@route(router, "POST", "/jobs/{job_id}/priority")
async def set_priority(request: Request, job_id: JobPath, payload: SetPriority) -> JobEnvelope:
    return _updated(jobs.update_job(master(request), job_id, {"priority": payload.priority}))


@route(router, "POST", "/jobs/{job_id}/weight")
async def set_weight(request: Request, job_id: JobPath, payload: SetWeight) -> JobEnvelope:
    return _updated(jobs.update_job(master(request), job_id, {"weight": payload.weight}))


@route(router, "POST", "/jobs/{job_id}/resource_pool")
async def set_pool(request: Request, job_id: JobPath, payload: SetPool) -> JobEnvelope:
    return _updated(jobs.update_job(master(request), job_id, {"resource_pool": payload.resource_pool}))


@route(router, "PATCH", "/jobs/{job_id}")
async def update(request: Request, job_id: JobPath, payload: UpdateJob) -> JobEnvelope:
    """Any of {priority, weight, max_slots, resource_pool}; the fields left out stay as they are."""
    return _updated(jobs.update_job(master(request), job_id, payload.model_dump(exclude_unset=True)))


@route(router, "POST", "/jobs/{job_id}/move")
async def move(request: Request, job_id: JobPath, payload: MoveJob) -> JobList:
    """{"ahead_of": JOB_ID} or {"behind_of": JOB_ID}."""
    return JobList(jobs=_as_seen_by(request, jobs.move_job(master(request), job_id, payload.ahead_of,
                                                            payload.behind_of)))


def _updated(job: dict[str, Any]) -> JobEnvelope:
    """The answer of a change to a job: the job as it is now (its editor may view it)."""
    return JobEnvelope(job=Job.model_validate(job))


def _entity_job(request: Request, kind: str, entity_id: int, payload: UpdateJob) -> JobEnvelope:
    m = master(request)
    with m.db.begin() as conn:
        job_id = jobs.job_of(conn, kind, entity_id)["id"]
    return _updated(jobs.update_job(m, job_id, payload.model_dump(exclude_unset=True)))


@route(router, "PATCH", "/experiments/{exp_id}/job")
async def update_experiment_job(request: Request, exp_id: IdPath, payload: UpdateJob) -> JobEnvelope:
    """`e set priority|weight|max-slots`: {priority | weight | max_slots}."""
    return _entity_job(request, jobs.EXPERIMENT, exp_id, payload)


@route(router, "PATCH", "/commands/{cmd_id}/job")
async def update_command_job(request: Request, cmd_id: IdPath, payload: UpdateJob) -> JobEnvelope:
    """`cmd set priority`: {priority}."""
    return _entity_job(request, jobs.COMMAND, cmd_id, payload)
