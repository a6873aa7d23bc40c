"""Experiments as Determined's CLI and SDK send and read them: CreateExperimentRequest with its `v1File` context,
Experiment, the create, describe and list answers, the job summary and the model definition (det-wire.md §2.1-2.5).

Required fields of the proto (`bindings.py` reads them with `obj["..."]`) are always emitted; the others are emitted
too, `null` where unset, as the real master's gateway does."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from stalwart.api.models.determined.wire import DetRequest, DetResponse, Int64, Pagination, Rfc3339

ExperimentStateName = Literal[
    "STATE_UNSPECIFIED", "STATE_ACTIVE", "STATE_PAUSED", "STATE_STOPPING_COMPLETED", "STATE_STOPPING_CANCELED",
    "STATE_STOPPING_ERROR", "STATE_STOPPING_KILLED", "STATE_COMPLETED", "STATE_CANCELED", "STATE_ERROR",
    "STATE_DELETED", "STATE_DELETING", "STATE_DELETE_FAILED", "STATE_QUEUED", "STATE_PULLING", "STATE_STARTING",
    "STATE_RUNNING",
]
"""Determined's experimentv1.State; its trialv1.State is the subset without the DELETE* values."""

REGULAR_FILE, DIRECTORY = 48, 53
"""`v1File.type`: tarfile's REGTYPE ('0') and DIRTYPE ('5') as numbers."""


class V1File(DetRequest):
    """One entry of a context as Determined's client sends it (`det e create CONFIG DIR`): its relative POSIX path,
    tar type, base64 content ("" for a directory), mtime (an int64: a string on the wire) and mode."""

    path: str = Field(min_length=1, max_length=4096)
    type: int = Field(description="48: a regular file, 53: a directory")
    content: str = Field(default="", description="base64 of the file's bytes")
    mtime: Annotated[int, Field(ge=0, le=2**63 - 1)] | str = 0
    mode: int = Field(default=0o644, ge=0, le=0o7777 | 0o170000)
    uid: int | None = 0
    gid: int | None = 0


class CreateExperimentRequest(DetRequest):
    """POST /api/v1/experiments: `config` is the YAML text of the config file; `modelDefinition` the context."""

    config: str | None = Field(default=None, max_length=4 * 1024 * 1024)
    modelDefinition: list[V1File] | None = Field(default=None, max_length=1_000_000)
    activate: bool | None = True
    validateOnly: bool | None = False
    projectId: int | None = Field(default=None, ge=0, le=2**31 - 1)
    parentId: int | None = Field(default=None, ge=0, le=2**31 - 1)
    template: str | None = Field(default=None, max_length=256)
    unmanaged: bool | None = False


class Experiment(DetResponse):
    """experimentv1.Experiment: `config` the merged config (secrets hidden), `originalConfig` its YAML text."""

    id: int
    name: str
    description: str
    labels: list[str]
    startTime: Rfc3339
    endTime: Rfc3339 | None
    state: ExperimentStateName
    archived: bool
    numTrials: int
    trialIds: list[int]
    displayName: str
    userId: int
    username: str
    resourcePool: str
    searcherType: str
    searcherMetric: str
    hyperparameters: dict[str, Any]
    notes: str
    jobId: str
    forkedFrom: int | None
    progress: float | None
    projectId: int
    projectName: str
    workspaceId: int
    workspaceName: str
    parentArchived: bool
    config: dict[str, Any]
    originalConfig: str
    projectOwnerId: int
    checkpointSize: Int64
    checkpointCount: int
    unmanaged: bool


class JobSummary(DetResponse):
    """Where a live experiment's job stands in its pool's queue."""

    state: Literal["STATE_UNSPECIFIED", "STATE_QUEUED", "STATE_SCHEDULED", "STATE_SCHEDULED_BACKFILLED"]
    jobsAhead: int


class CreateExperimentResponse(DetResponse):
    """`config` is null (and `experiment` empty) for validateOnly, as the real master answers."""

    experiment: Experiment
    config: dict[str, Any] | None
    warnings: list[Literal["LAUNCH_WARNING_UNSPECIFIED", "LAUNCH_WARNING_CURRENT_SLOTS_EXCEEDED"]]


class GetExperimentResponse(DetResponse):
    experiment: Experiment
    config: dict[str, Any]
    jobSummary: JobSummary | None


class GetExperimentsResponse(DetResponse):
    experiments: list[Experiment]
    pagination: Pagination


class GetModelDefResponse(DetResponse):
    """The experiment's context as a base64 .tgz."""

    b64Tgz: str
