"""Checkpoints: what a trial registers, what describe/list answer, and what a delete names."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stalwart.api.models.common import AllocationId, Id, JsonObject, Request, Response, Steps, Timestamp, Uuid

CheckpointState = Literal["ACTIVE", "COMPLETED", "PARTIALLY_DELETED", "DELETED", "ERROR", "UNSPECIFIED"]


class Checkpoint(Response):
    uuid: Uuid
    trial_id: Id | None = None
    allocation_id: AllocationId | None = None
    steps_completed: Steps | None = None
    state: str = Field(max_length=32)
    resources: dict[str, int] | None = None
    metadata: JsonObject | None = None
    storage: JsonObject | None = None
    report_time: Timestamp | None = None


class CheckpointEnvelope(Response):
    """`{"checkpoint": ...}`: describe and register."""

    checkpoint: Checkpoint


class CheckpointList(Response):
    checkpoints: list[Checkpoint]


class RegisterCheckpoint(Request):
    """POST /api/v1/checkpoints (allocation token): a checkpoint the trial has written to storage."""

    trial_id: Id
    uuid: Uuid
    metadata: JsonObject | None = None
    resources: dict[str, int] | None = None


class DeleteCheckpoints(Request):
    """DELETE /api/v1/checkpoints: every uuid must exist (404 naming the first unknown one, nothing deleted)."""

    uuids: list[Uuid] = Field(min_length=1, max_length=10_000)
