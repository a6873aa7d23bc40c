"""Detached trials (core_v2 outside the cluster): a script makes its trial, starts a run, beats and ends it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stalwart.api.models.common import Id, JsonObject, Request, Response, RunId, Steps
from stalwart.api.models.trials import Trial

MAX_EXTERNAL_TRIAL_ID = 60  # the trial's request id holds it, after a 4-character prefix


class CreateDetachedTrial(Request):
    """POST /api/v1/experiments/{exp_id}/trials: a trial of a detached experiment, or the one its external id names."""

    hparams: JsonObject = Field(default_factory=dict, description="the hyperparameters the script trains with")
    external_trial_id: str | None = Field(default=None, min_length=1, max_length=MAX_EXTERNAL_TRIAL_ID,
                                          description="the script's own id for the trial: the same id finds the "
                                                      "same trial again (to resume it)")


class DetachedTrial(Response):
    trial: Trial
    external_trial_id: str | None = None


class StartDetachedRun(Request):
    """POST /api/v1/trials/{trial_id}/runs."""

    resume: bool = Field(default=True, description="a trial that ran before runs again from its latest checkpoint "
                                                   "(false: refused for such a trial)")


class DetachedRun(Response):
    """A started run: its token authenticates the trial's reports (metrics, checkpoints, logs) as a managed run's."""

    allocation_id: str = Field(max_length=64)
    allocation_token: str = Field(max_length=512)
    trial_id: Id
    experiment_id: Id
    trial_run_id: RunId
    trial_seed: int
    hparams: JsonObject
    config: JsonObject = Field(description="the experiment's config, its secrets hidden")
    steps_completed: Steps
    latest_checkpoint: str | None = Field(default=None, max_length=64)
    heartbeat_timeout_s: float = Field(gt=0, description="the run ends in ERROR after this long without a heartbeat")
    cluster_id: str = Field(max_length=64)


class EndDetachedRun(Request):
    """POST /api/v1/allocations/{allocation_id}/detached/end."""

    state: Literal["COMPLETED", "ERROR"]
    message: str | None = Field(default=None, max_length=4096, description="why it ends (shown in the trial's log)")
