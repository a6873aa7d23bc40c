"""Checkpoints: what a trial registers, and what describe/list answer."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from stalwart.api.models.common import AllocationId, Id, JsonObject, Request, Response, Steps, Timestamp, Uuid

CheckpointState = Literal["ACTIVE", "COMPLETED", "PARTIALLY_DELETED", "DELETED", "ERROR", "UNSPECIFIED"]


class Checkpoint(Response):
    uuid: Uuid
    trial_id: Optional[Id] = None
    allocation_id: Optional[AllocationId] = None
    steps_completed: Optional[Steps] = None
    state: str = Field(max_length=32)
    resources: Optional[dict[str, int]] = None
    metadata: Optional[JsonObject] = None
    storage: Optional[JsonObject] = None
    report_time: Optional[Timestamp] = None


class CheckpointEnvelope(Response):
    """`{"checkpoint": ...}`: describe and register."""

    checkpoint: Checkpoint


class CheckpointList(Response):
    checkpoints: list[Checkpoint]


class RegisterCheckpoint(Request):
    """POST /api/v1/checkpoints (allocation token): a checkpoint the trial has written to storage."""

    trial_id: Id
    uuid: Uuid
    metadata: Optional[JsonObject] = None
    resources: Optional[dict[str, int]] = None
