"""The job queue: list, describe, and change a job's priority, weight, pool or place."""

from __future__ import annotations

from stalwart.api.models import jobs
from stalwart.client.endpoints import Api, body, endpoint

J = "/api/v1/jobs"

LIST = endpoint("GET", J, jobs.JobList)
DESCRIBE = endpoint("GET", J + "/{job_id}", jobs.JobEnvelope)
UPDATE = endpoint("PATCH", J + "/{job_id}", jobs.JobEnvelope, jobs.UpdateJob)
MOVE = endpoint("POST", J + "/{job_id}/move", jobs.JobList, jobs.MoveJob)
SET_PRIORITY = endpoint("POST", J + "/{job_id}/priority", jobs.JobEnvelope, jobs.SetPriority)
SET_WEIGHT = endpoint("POST", J + "/{job_id}/weight", jobs.JobEnvelope, jobs.SetWeight)
SET_POOL = endpoint("POST", J + "/{job_id}/resource_pool", jobs.JobEnvelope, jobs.SetPool)


class JobsApi(Api):
    def list_jobs(self, *, resource_pool: str | None = None) -> jobs.JobList:
        return self.call(LIST, params={"resource_pool": resource_pool})

    def get_job(self, job_id: str) -> jobs.JobEnvelope:
        return self.call(DESCRIBE, path={"job_id": job_id})

    def update_job(self, job_id: str, *, priority: int | None = None, weight: float | None = None,
                   max_slots: int | None = None, resource_pool: str | None = None) -> jobs.JobEnvelope:
        """Change the given fields at once (effective on the next scheduling pass)."""
        changes = {k: v for k, v in (("priority", priority), ("weight", weight), ("max_slots", max_slots),
                                     ("resource_pool", resource_pool)) if v is not None}
        return self.call(UPDATE, path={"job_id": job_id}, json_body=body(jobs.UpdateJob, **changes))

    def move_job(self, job_id: str, *, ahead_of: str | None = None, behind_of: str | None = None) -> jobs.JobList:
        """Put the job just ahead of or just behind another one; the queue as it is then."""
        place = {"ahead_of": ahead_of} if ahead_of else {"behind_of": behind_of}
        return self.call(MOVE, path={"job_id": job_id}, json_body=body(jobs.MoveJob, **place))

    def set_job_priority(self, job_id: str, priority: int) -> jobs.JobEnvelope:
        return self.call(SET_PRIORITY, path={"job_id": job_id}, json_body=body(jobs.SetPriority, priority=priority))

    def set_job_weight(self, job_id: str, weight: float) -> jobs.JobEnvelope:
        return self.call(SET_WEIGHT, path={"job_id": job_id}, json_body=body(jobs.SetWeight, weight=weight))

    def set_job_pool(self, job_id: str, resource_pool: str) -> jobs.JobEnvelope:
        return self.call(SET_POOL, path={"job_id": job_id},
                         json_body=body(jobs.SetPool, resource_pool=resource_pool))
