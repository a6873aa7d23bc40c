"""Detached mode as Determined's own `core_v2` sends it (a script outside any cluster reporting as a trial, with its
user's session): the master's identity, making, finding and starting a trial, its metrics, checkpoints, heartbeats
and printed lines (docs/determined-cli.md, "core_v2 outside the cluster")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, RootModel

from stalwart.api.models.detached import MAX_EXTERNAL_TRIAL_ID
from stalwart.api.models.determined.experiments import Experiment
from stalwart.api.models.determined.trials import Trial, TrialStateName
from stalwart.api.models.determined.wire import DetRequest, DetResponse

MAX_ID = 2**31 - 1
MAX_STEPS = 2**63 - 1


class GetMasterResponse(DetResponse):
    """`GET /api/v1/master`: who the master is (core_v2 reads `clusterId`, for its TensorBoard paths)."""

    version: str
    masterId: str
    clusterId: str
    clusterName: str
    telemetryEnabled: bool
    hasCustomLogo: bool
    strictJobQueueControl: bool
    rbacEnabled: bool
    userManagementEnabled: bool
    featureSwitches: list[str]


class PutExperimentResponse(DetResponse):
    """`PUT /api/v1/experiments/by-external-id/{id}`: the detached experiment that id names (made when none does)."""

    experiment: Experiment
    config: dict[str, Any]


class CreateTrialRequest(DetRequest):
    """`POST /api/v1/trials`: a trial of a detached experiment, with the hparams the script trains with."""

    experimentId: int | None = Field(default=None, ge=1, le=MAX_ID)
    hparams: dict[str, Any] | None = None
    unmanaged: bool | None = None


class PutTrialRequest(DetRequest):
    """`PUT /api/v1/trials`: the trial `externalTrialId` names in the experiment, else a new one."""

    createTrialRequest: CreateTrialRequest | None = None
    externalTrialId: str | None = Field(default=None, min_length=1, max_length=MAX_EXTERNAL_TRIAL_ID)


class TrialResponse(DetResponse):
    """What CreateTrial, PutTrial and PatchTrial answer."""

    trial: Trial


class StartTrialRequest(DetRequest):
    """`POST /api/v1/trials/{trial_id}/start`: a run of the trial starts now (`resume`: one that ran before runs
    again from its latest checkpoint)."""

    trialId: int | None = Field(default=None, ge=1, le=MAX_ID)
    resume: bool | None = True


class StartTrialResponse(DetResponse):
    trialRunId: int
    stepsCompleted: int
    latestCheckpoint: str | None


class RunPrepareForReportingRequest(DetRequest):
    """`POST /api/v1/runs/start`: the script is about to report for run (trial) `runId` to `checkpointStorage`."""

    runId: int = Field(ge=1, le=MAX_ID)
    checkpointStorage: dict[str, Any] | None = None


class RunPrepareForReportingResponse(DetResponse):
    """No storage id: the master records each checkpoint with its experiment's checkpoint_storage."""


class ReportedMetrics(DetRequest):
    avgMetrics: dict[str, Any]
    batchMetrics: list[dict[str, Any]] | None = None


class TrialMetrics(DetRequest):
    trialId: int = Field(ge=1, le=MAX_ID)
    trialRunId: int = Field(default=0, ge=0, le=MAX_ID)
    stepsCompleted: int | None = Field(default=None, ge=0, le=MAX_STEPS)
    reportTime: str | None = Field(default=None, max_length=64, description="RFC 3339; the master's time if unset")
    metrics: ReportedMetrics


class ReportTrialMetricsRequest(DetRequest):
    """`POST /api/v1/trials/{trial_id}/metrics`: one report of `group` (training, validation or another name)."""

    group: str = Field(min_length=1, max_length=64)
    metrics: TrialMetrics


class ReportCheckpointRequest(DetRequest):
    """`POST /api/v1/checkpoints` (a v1Checkpoint): one the script has stored; `taskId` names its trial and
    `metadata.steps_completed` is required."""

    uuid: str = Field(max_length=64)
    taskId: str | None = Field(default=None, max_length=128)
    allocationId: str | None = Field(default=None, max_length=64)
    reportTime: str | None = Field(default=None, max_length=64)
    resources: dict[str, str | int] = Field(default_factory=dict, description="file path -> size in bytes")
    metadata: dict[str, Any] = Field(default_factory=dict)
    state: str | None = Field(default=None, max_length=32)
    storageId: int | None = None
    training: dict[str, Any] | None = None


class PatchTrialRequest(DetRequest):
    """`PATCH /api/v1/trials/{trial_id}`: a heartbeat of the trial's running script (no state), or its state:
    RUNNING as it starts, COMPLETED or ERROR as it ends."""

    trialId: int | None = Field(default=None, ge=1, le=MAX_ID)
    state: TrialStateName | None = None


class TaskLogEntry(DetRequest):
    """One printed line of a detached script (Determined's `task-logs` shape)."""

    task_id: str = Field(min_length=1, max_length=128)
    log: str = Field(default="", max_length=1024 * 1024)
    timestamp: str | None = Field(default=None, max_length=64, description="RFC 3339")
    rank: str | int | None = None
    stdtype: Literal["stdout", "stderr"] | None = None


class TaskLogsRequest(RootModel[list[TaskLogEntry]]):
    """`POST /task-logs`: a batch of printed lines (a JSON list)."""

    root: list[TaskLogEntry] = Field(max_length=10_000)
