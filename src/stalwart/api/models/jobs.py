"""The job queue: jobs in queue order, and their priority, weight, max slots, pool and position."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from stalwart.api.models.common import Id, JobId, Request, Response, Timestamp

JobType = Literal["EXPERIMENT", "COMMAND"]


class Job(Response):
    job_id: JobId
    type: JobType
    entity_id: Id
    name: Optional[str] = None
    owner: Optional[str] = None
    state: str
    priority: int = Field(ge=1, le=99)
    weight: float = Field(gt=0)
    max_slots: Optional[int] = Field(default=None, ge=0)
    queue_position: Optional[int] = Field(default=None, ge=0)
    resource_pool: str
    slots_requested: int = Field(ge=0)
    slots_allocated: int = Field(ge=0)
    submitted_at: Optional[Timestamp] = None
    reason: Optional[str] = None


class JobList(Response):
    jobs: list[Job]


class JobEnvelope(Response):
    job: Job


class SetPriority(Request):
    priority: int = Field(ge=1, le=99)


class SetWeight(Request):
    weight: float = Field(gt=0)


class SetPool(Request):
    resource_pool: str = Field(min_length=1, max_length=255)


class UpdateJob(Request):
    """PATCH: any of these."""

    priority: Optional[int] = Field(default=None, ge=1, le=99)
    weight: Optional[float] = Field(default=None, gt=0)
    max_slots: Optional[int] = Field(default=None, ge=0)
    resource_pool: Optional[str] = Field(default=None, min_length=1, max_length=255)


class MoveJob(Request):
    """One of ahead_of / behind_of."""

    ahead_of: Optional[JobId] = None
    behind_of: Optional[JobId] = None
