"""Experiments: create, list, describe, edit, continue, actions, the context archive and the best validation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from stalwart.api.models.common import (
    Fraction,
    Id,
    JsonObject,
    MetricNumber,
    Name,
    Request,
    Response,
    Steps,
    Timestamp,
    Uuid,
)
from stalwart.api.models.trials import Trial
from stalwart.api.states import ExperimentState

MAX_B64_CONTEXT = 130 * 1024 * 1024  # limits.max_request_body by default: the whole request


class CreateExperiment(Request):
    """POST /api/v1/experiments."""

    config: str = Field(min_length=1, description="the experiment config as YAML text")
    context: str = Field(default="", max_length=MAX_B64_CONTEXT, description="base64 of the context .tgz")
    activate: bool = True
    owner: str | None = Field(default=None, max_length=255)
    validate_only: bool = False
    parent_id: Id | None = Field(default=None, description="the experiment this one is forked from: a secret its "
                                                          "config shows hidden ('********') keeps the parent's value")
    template: str | None = Field(default=None, min_length=1, max_length=256, description="a configuration template "
                                 "merged under the config (docs/templates.md); the merged config is stored")
    unmanaged: bool = Field(default=False, description="a detached experiment (docs/detached.md): reported by a script "
                                                       "outside the cluster; no context, no entrypoint, nothing "
                                                       "scheduled")
    external_experiment_id: str | None = Field(default=None, min_length=1, max_length=256, description="with "
                                               "unmanaged: the detached experiment with this id is answered if there "
                                               "is one (the caller must be able to edit it), else made with it")


Label = Annotated[str, Field(min_length=1, max_length=255)]
SortBy = Literal["id", "name", "state", "start_time", "end_time", "progress"]
OrderBy = Literal["asc", "desc"]
MAX_NOTES = 1024 * 1024


class PatchExperiment(Request):
    """PATCH /api/v1/experiments/{exp_id}: only the fields given change; `labels` replaces the whole list.
    `description` and `notes` may be null (cleared); `name` may not. An unknown field is refused (a misspelt
    field must not answer success having changed nothing)."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=512)] | None = None
    description: str | None = Field(default=None, max_length=MAX_NOTES)
    notes: str | None = Field(default=None, max_length=MAX_NOTES)
    labels: list[Label] | None = Field(default=None, max_length=1000)


class ContinueExperiment(Request):
    """POST /api/v1/experiments/{exp_id}/continue: a partial config merged over the stored one
    (e.g. {"searcher": {"max_length": {"batches": 200}}}); hyperparameters and the searcher's name stay.
    An unknown field is refused."""

    model_config = ConfigDict(extra="forbid")

    overrides: JsonObject = Field(default_factory=dict)


class BestValidation(Response):
    trial_id: Id
    steps_completed: Steps
    value: MetricNumber
    metric: str


class Experiment(Response):
    id: Id
    name: Name | None = None
    description: str | None = None
    notes: str | None = None
    labels: list[str] = Field(default_factory=list)
    owner: str
    state: ExperimentState
    archived: bool
    progress: Fraction | None = None
    searcher: str
    metric: str | None = None
    smaller_is_better: bool
    error_message: str | None = None
    created_at: Timestamp
    ended_at: Timestamp | None = None
    project_id: Id | None = None
    num_trials: int | None = Field(default=None, ge=0, description="only in lists")
    workspace: str | None = Field(default=None, description="the name of its workspace")
    project: str | None = Field(default=None, description="the name of its project")
    best_validation: BestValidation | None = Field(default=None, description="only in describe")
    warnings: list[str] | None = Field(default=None, description="placement warnings (create, describe)")


class CreatedExperiment(Response):
    """`experiment` is null for validate_only."""

    experiment: Experiment | None
    warnings: list[str]


class ExperimentList(Response):
    experiments: list[Experiment]
    total: int = Field(ge=0)


class ExperimentDetail(Response):
    experiment: Experiment
    config: JsonObject
    trials: list[Trial]


class ExperimentEnvelope(Response):
    """The answer of PATCH, continue, move, and the pause/activate/cancel/kill/archive/unarchive actions."""

    experiment: Experiment
    warnings: list[str] = Field(default_factory=list, max_length=1000,
                                description="what the change did not do as asked (a move answers it, empty)")


class KeptCheckpoint(Response):
    """A checkpoint an experiment's delete kept because something else still uses it."""

    uuid: Uuid
    reason: str = Field(description="who uses it: 'trial 31 of experiment 12 started from it'")


class DeletedExperiment(Response):
    """DELETE /api/v1/experiments/{exp_id}: how many checkpoints' files were deleted, and those kept (files and
    record) because another experiment's trials started, or will start, from them."""

    deleted_checkpoints: int = Field(default=0, ge=0)
    kept_checkpoints: list[KeptCheckpoint] = Field(default_factory=list)


class TrialList(Response):
    trials: list[Trial]


class ModelDef(Response):
    """The experiment's context archive, Determined's name for it."""

    b64Tgz: str


class BestMetric(Response):
    metric: MetricNumber


GcCount = Annotated[int, Field(ge=0, le=2**31 - 1, description="how many checkpoints to keep (0 or more)")]


class ChangeGcPolicy(Request):
    """PATCH /api/v1/experiments/{exp_id}/checkpoint-gc-policy: Determined's `e set gc-policy`. With dry_run, only
    what the policy would delete and keep; otherwise the experiment's checkpoint_storage policy changes and its
    checkpoints beyond it are deleted. An unknown field is refused."""

    model_config = ConfigDict(extra="forbid")

    save_experiment_best: GcCount
    save_trial_best: GcCount
    save_trial_latest: GcCount
    dry_run: bool = False


class RetainLogs(Request):
    """PUT /api/v1/experiments/{exp_id}/retain_logs: Determined's `e set log-retention`. The experiment's trials keep
    their logs `num_days` days after they end (-1: forever), whatever the master's retention_policy says; only an
    experiment that has ended may be changed (Determined's rule: trials made later would not follow it)."""

    model_config = ConfigDict(extra="forbid")

    num_days: int = Field(ge=-1, le=32767, description="days the logs are kept after a trial ends; -1: forever")


class GcCheckpoint(Response):
    """One checkpoint in a GC policy's answer; `reason` says why it is kept (empty for one deleted)."""

    uuid: Uuid
    trial_id: Id
    steps_completed: Steps
    metric: MetricNumber | None = Field(default=None, description="the searcher metric's validation at its step")
    reason: str = ""


class GcPolicyChange(Response):
    """What a checkpoint GC policy deletes and keeps of an experiment's COMPLETED checkpoints (dry_run: would).
    `not_deleted`: those whose files could not be deleted (still COMPLETED; the master log says why)."""

    dry_run: bool
    metric: str | None = None
    smaller_is_better: bool
    save_experiment_best: GcCount
    save_trial_best: GcCount
    save_trial_latest: GcCount
    to_delete: list[GcCheckpoint]
    to_keep: list[GcCheckpoint]
    not_deleted: list[GcCheckpoint] = Field(default_factory=list)
