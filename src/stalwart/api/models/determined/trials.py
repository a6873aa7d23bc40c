"""Trials as Determined's CLI and SDK read them: trialv1.Trial, its workloads (metrics and checkpoints by batch) and
the list and describe answers (det-wire.md §2.3, §2.6)."""

from __future__ import annotations

from typing import Any, Literal

from stalwart.api.models.determined.wire import DetResponse, Int64, Pagination, Rfc3339

TrialStateName = Literal[
    "STATE_UNSPECIFIED", "STATE_ACTIVE", "STATE_PAUSED", "STATE_STOPPING_CANCELED", "STATE_STOPPING_KILLED",
    "STATE_STOPPING_COMPLETED", "STATE_STOPPING_ERROR", "STATE_CANCELED", "STATE_COMPLETED", "STATE_ERROR",
    "STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING",
]
CheckpointStateName = Literal["STATE_UNSPECIFIED", "STATE_ACTIVE", "STATE_COMPLETED", "STATE_ERROR", "STATE_DELETED",
                              "STATE_PARTIALLY_DELETED"]


class Metrics(DetResponse):
    """One report's metrics: `avgMetrics` the reported values; no per-batch values are kept."""

    avgMetrics: dict[str, Any]
    batchMetrics: list[dict[str, Any]]


class MetricsWorkload(DetResponse):
    """A training or validation report at `totalBatches` (the trial's steps completed when it reported)."""

    endTime: Rfc3339 | None
    metrics: Metrics
    numInputs: int
    totalBatches: int


class CheckpointWorkload(DetResponse):
    uuid: str
    endTime: Rfc3339 | None
    state: CheckpointStateName
    resources: dict[str, Int64]
    totalBatches: int
    metadata: dict[str, Any]


class WorkloadContainer(DetResponse):
    """One workload: exactly one of the three is set."""

    training: MetricsWorkload | None
    validation: MetricsWorkload | None
    checkpoint: CheckpointWorkload | None


class Trial(DetResponse):
    """trialv1.Trial. `totalBatchesProcessed` is the most steps it reported; `searcherMetricValue` its best
    validation of the searcher's metric."""

    id: int
    experimentId: int
    startTime: Rfc3339
    endTime: Rfc3339 | None
    state: TrialStateName
    restarts: int
    hparams: dict[str, Any]
    totalBatchesProcessed: int
    bestValidation: MetricsWorkload | None
    latestValidation: MetricsWorkload | None
    bestCheckpoint: CheckpointWorkload | None
    runnerState: str
    wallClockTime: float
    warmStartCheckpointUuid: str
    taskId: str
    taskIds: list[str]
    totalCheckpointSize: Int64
    checkpointCount: int
    searcherMetricValue: float | None
    summaryMetrics: dict[str, Any]
    metadata: dict[str, Any]


class GetExperimentTrialsResponse(DetResponse):
    trials: list[Trial]
    pagination: Pagination


class GetTrialResponse(DetResponse):
    trial: Trial


class GetTrialWorkloadsResponse(DetResponse):
    workloads: list[WorkloadContainer]
    pagination: Pagination
