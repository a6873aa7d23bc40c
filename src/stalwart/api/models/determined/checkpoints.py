"""Checkpoints as Determined's CLI and SDK read them: `Checkpoint` with its training metadata, an experiment's list."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from stalwart.api.models.determined.wire import DetResponse, Int64, Pagination, Rfc3339

CheckpointState = Literal["STATE_UNSPECIFIED", "STATE_ACTIVE", "STATE_COMPLETED", "STATE_ERROR", "STATE_DELETED",
                          "STATE_PARTIALLY_DELETED"]
SortBy = Literal["SORT_BY_UNSPECIFIED", "SORT_BY_UUID", "SORT_BY_TRIAL_ID", "SORT_BY_BATCH_NUMBER",
                 "SORT_BY_END_TIME", "SORT_BY_STATE", "SORT_BY_SEARCHER_METRIC"]


class Metrics(DetResponse):
    """The metrics a trial reported at the checkpoint's steps: `avgMetrics` (one report), no per-batch values."""

    avgMetrics: dict[str, Any]
    batchMetrics: list[dict[str, Any]] = Field(default_factory=list)


class CheckpointTrainingMetadata(DetResponse):
    """Who made the checkpoint. The client needs `trialId`, `experimentId` and `experimentConfig` (its
    `checkpoint_storage.type`, `searcher.metric`) to download or list it; `searcherMetric` is left out when the
    trial reported no number for the searcher's metric at the checkpoint's steps."""

    trialId: int
    experimentId: int
    experimentConfig: dict[str, Any]
    hparams: dict[str, Any]
    trainingMetrics: Metrics | None
    validationMetrics: Metrics | None
    searcherMetric: float | None = None


class Checkpoint(DetResponse):
    uuid: str
    taskId: str
    allocationId: str | None = None
    reportTime: Rfc3339 | None
    resources: dict[str, Int64] = Field(description="file path -> size in bytes")
    metadata: dict[str, Any] = Field(description="what the trial stored with it; steps_completed always")
    state: CheckpointState
    training: CheckpointTrainingMetadata


class GetExperimentCheckpointsResponse(DetResponse):
    checkpoints: list[Checkpoint]
    pagination: Pagination


class GetCheckpointResponse(DetResponse):
    checkpoint: Checkpoint
