"""The job queue: jobs in queue order, and their priority, weight, max slots, pool and position."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from stalwart.api.models.agents import SlotCount
from stalwart.api.models.common import Id, JobId, Request, Response, Timestamp

JobType = Literal["EXPERIMENT", "COMMAND"]


def _priority(value: int) -> int:
    if not 1 <= value <= 99:
        raise PydanticCustomError("priority", "expected an integer from 1 (most urgent) to 99, got {value}",
                                  {"value": value})
    return value


def _weight(value: float) -> float:
    if not 0 < value < math.inf:
        raise PydanticCustomError("weight", "expected a number > 0, got {value}", {"value": value})
    return value


# The range checks give the messages the master's own checks give (scheduling/jobs.py), so a client that checks a
# body before sending it and the master say the same; the JSON schema states the same ranges.
Priority = Annotated[int, Field(strict=True, json_schema_extra={"minimum": 1, "maximum": 99},
                                description="1 (most urgent) to 99"), AfterValidator(_priority)]
Weight = Annotated[float, Field(strict=True, allow_inf_nan=False, json_schema_extra={"exclusiveMinimum": 0},
                                description="a number > 0: the job's share of its pool (fair share)"),
                   AfterValidator(_weight)]
MaxSlots = Annotated[SlotCount, Field(strict=True, description="the most slots the job may hold at once")]


class Job(Response):
    """A job of the queue. One the caller may not view is shown anonymously (`limited`: Determined's LimitedJob):
    its place, pool, state, priority, weight and slots, with no experiment or command, name, owner or reason."""

    job_id: JobId
    type: JobType
    task_kind: str | None = Field(default=None, description="a COMMAND job's kind of task: command, notebook, "
                                                            "tensorboard or shell (its id: <kind>-<entity_id>)")
    entity_id: Id | None = None
    name: str | None = None
    owner: str | None = None
    workspace_id: Id | None = None
    state: str
    priority: int = Field(ge=1, le=99)
    weight: float = Field(gt=0)
    max_slots: int | None = Field(default=None, ge=0)
    queue_position: int | None = Field(default=None, ge=0)
    resource_pool: str
    slots_requested: int = Field(ge=0)
    slots_allocated: int = Field(ge=0)
    submitted_at: Timestamp | None = None
    reason: str | None = None
    limited: bool = False


class JobList(Response):
    jobs: list[Job]


class JobEnvelope(Response):
    job: Job


class SetPriority(Request):
    priority: Priority


class SetWeight(Request):
    weight: Weight


class SetPool(Request):
    resource_pool: str = Field(min_length=1, max_length=255)


class UpdateJob(Request):
    """PATCH: any of these (no other key); those left out stay as they are, `max_slots: null` lifts the cap."""

    model_config = ConfigDict(extra="forbid")

    priority: Priority | None = None
    weight: Weight | None = None
    max_slots: MaxSlots | None = None
    resource_pool: str | None = Field(default=None, min_length=1, max_length=255)


class MoveJob(Request):
    """One of ahead_of / behind_of."""

    ahead_of: JobId | None = None
    behind_of: JobId | None = None
