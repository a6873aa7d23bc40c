"""Detached trials (docs/detached.md): what a script outside the cluster asks of the master to report as a trial.

The experiment and its trial are made (or found again by their external ids) and a run started with the user's
session; the run's heartbeats and end go with the run's own token (`allocation_token` of the started run)."""

from __future__ import annotations

from typing import Any

from stalwart.api.models import common, detached, experiments
from stalwart.client.endpoints import Api, body, endpoint

CREATE_EXPERIMENT = endpoint("POST", "/api/v1/experiments", experiments.CreatedExperiment,
                             experiments.CreateExperiment)
CREATE_TRIAL = endpoint("POST", "/api/v1/experiments/{exp_id}/trials", detached.DetachedTrial,
                        detached.CreateDetachedTrial)
START_RUN = endpoint("POST", "/api/v1/trials/{trial_id}/runs", detached.DetachedRun, detached.StartDetachedRun)
HEARTBEAT = endpoint("POST", "/api/v1/allocations/{allocation_id}/detached/heartbeat", common.Empty)
END_RUN = endpoint("POST", "/api/v1/allocations/{allocation_id}/detached/end", common.Empty, detached.EndDetachedRun)


class DetachedApi(Api):
    def create_detached_experiment(self, config: str, external_id: str | None = None) -> experiments.CreatedExperiment:
        """A detached experiment from `config` (YAML text, no entrypoint), or the one `external_id` names."""
        fields: dict[str, Any] = {"config": config, "unmanaged": True}
        if external_id is not None:
            fields["external_experiment_id"] = external_id
        return self.call(CREATE_EXPERIMENT, json_body=body(experiments.CreateExperiment, **fields))

    def create_detached_trial(self, exp_id: int, hparams: dict[str, Any],
                              external_id: str | None = None) -> detached.DetachedTrial:
        """A trial of the detached experiment, or the one `external_id` names."""
        return self.call(CREATE_TRIAL, path={"exp_id": exp_id}, json_body=body(
            detached.CreateDetachedTrial, hparams=hparams, external_trial_id=external_id))

    def start_detached_run(self, trial_id: int, *, resume: bool = True) -> detached.DetachedRun:
        """A run of the detached trial starts now: the answer holds its token."""
        return self.call(START_RUN, path={"trial_id": trial_id},
                         json_body=body(detached.StartDetachedRun, resume=resume))

    def detached_heartbeat(self, allocation_id: str) -> None:
        """The run's script is alive (with the run's token)."""
        self.call(HEARTBEAT, path={"allocation_id": allocation_id})

    def end_detached_run(self, allocation_id: str, state: str, message: str | None = None) -> None:
        """The script ends its run, COMPLETED or ERROR (with the run's token)."""
        self.call(END_RUN, path={"allocation_id": allocation_id},
                  json_body=body(detached.EndDetachedRun, state=state, message=message))
