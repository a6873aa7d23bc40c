"""An in-memory job queue with the API shape the UI expects (docs/ui.md), for the UI tests until the master has one."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse


def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"kind": kind, "message": message, "details": []}}, status_code=status)


def install(app: FastAPI) -> None:
    jobs = [
        {"job_id": f"job-{i}", "type": "EXPERIMENT", "entity_id": 1000 + i, "name": f"queued experiment {i}",
         "owner": "tester", "state": "QUEUED", "priority": 42, "resource_pool": "default", "slots_requested": 1,
         "slots_allocated": 0, "submitted_at": 1_790_000_000.0 + i}
        for i in range(1, 4)
    ]
    router = APIRouter(prefix="/api/v1/jobs")

    def numbered() -> list[dict]:
        return [{**j, "queue_position": i + 1} for i, j in enumerate(jobs)]

    def find(job_id: str) -> dict | None:
        return next((j for j in jobs if j["job_id"] == job_id), None)

    @router.get("")
    async def list_jobs() -> dict:
        return {"jobs": numbered()}

    @router.post("/{job_id}/priority")
    async def priority(job_id: str, request: Request):
        job = find(job_id)
        if job is None:
            return _error(404, "not_found", f"job {job_id} not found")
        value = (await request.json()).get("priority")
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 99:
            return _error(400, "invalid_request", f"priority: expected an integer in 1..99, got {value!r}")
        job["priority"] = value
        return {"job": next(j for j in numbered() if j["job_id"] == job_id)}

    @router.post("/{job_id}/move")
    async def move(job_id: str, request: Request):
        job = find(job_id)
        body = await request.json()
        other = find(body.get("ahead_of") or body.get("behind_of") or "")
        if job is None or other is None:
            return _error(404, "not_found", "job not found")
        jobs.remove(job)
        at = jobs.index(other)
        jobs.insert(at if "ahead_of" in body else at + 1, job)
        return {"jobs": numbered()}

    app.include_router(router)
