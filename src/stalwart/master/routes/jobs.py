"""/api/v1/jobs: the job queue (list in queue order, priority, weight, pool, moves) and `e set` shortcuts."""

from __future__ import annotations

from fastapi import APIRouter, Request

from stalwart.api.errors import InvalidRequest
from stalwart.master.routes.common import body, master
from stalwart.master.scheduling import jobs

router = APIRouter(prefix="/api/v1", tags=["jobs"])


@router.get("/jobs")
async def list_jobs(request: Request, resource_pool: str | None = None) -> dict:
    return {"jobs": jobs.list_jobs(master(request), resource_pool)}


@router.get("/jobs/{job_id}")
async def get_job(request: Request, job_id: str) -> dict:
    return {"job": jobs.get_job(master(request), job_id)}


@router.post("/jobs/{job_id}/priority")
async def set_priority(request: Request, job_id: str) -> dict:
    data = await body(request)
    if "priority" not in data:
        raise InvalidRequest("priority: required, an integer from 1 (most urgent) to 99")
    return {"job": jobs.update_job(master(request), job_id, {"priority": data["priority"]})}


@router.post("/jobs/{job_id}/weight")
async def set_weight(request: Request, job_id: str) -> dict:
    data = await body(request)
    if "weight" not in data:
        raise InvalidRequest("weight: required, a number > 0")
    return {"job": jobs.update_job(master(request), job_id, {"weight": data["weight"]})}


@router.post("/jobs/{job_id}/resource_pool")
async def set_pool(request: Request, job_id: str) -> dict:
    data = await body(request)
    if "resource_pool" not in data:
        raise InvalidRequest("resource_pool: required, a pool name")
    return {"job": jobs.update_job(master(request), job_id, {"resource_pool": data["resource_pool"]})}


@router.patch("/jobs/{job_id}")
async def update(request: Request, job_id: str) -> dict:
    """Body: any of {priority, weight, max_slots, resource_pool}."""
    return {"job": jobs.update_job(master(request), job_id, await body(request))}


@router.post("/jobs/{job_id}/move")
async def move(request: Request, job_id: str) -> dict:
    """Body: {"ahead_of": JOB_ID} or {"behind_of": JOB_ID}."""
    data = await body(request)
    return {"jobs": jobs.move_job(master(request), job_id, data.get("ahead_of"), data.get("behind_of"))}


async def _entity_job(request: Request, kind: str, entity_id: int) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        job_id = jobs.job_of(conn, kind, entity_id)["id"]
    return {"job": jobs.update_job(m, job_id, await body(request))}


@router.patch("/experiments/{exp_id}/job")
async def update_experiment_job(request: Request, exp_id: int) -> dict:
    """`e set priority|weight|max-slots`: body {priority | weight | max_slots}."""
    return await _entity_job(request, jobs.EXPERIMENT, exp_id)


@router.patch("/commands/{cmd_id}/job")
async def update_command_job(request: Request, cmd_id: int) -> dict:
    """`cmd set priority`: body {priority}."""
    return await _entity_job(request, jobs.COMMAND, cmd_id)
