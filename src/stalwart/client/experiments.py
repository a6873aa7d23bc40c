"""Experiments: create, list (filtered, sorted), describe, edit, delete, continue, actions, trials, checkpoints and
their GC policy, log retention, the context archive, the best validation."""

from __future__ import annotations

from typing import Any, Literal

from stalwart.api.models import checkpoints, common, experiments, jobs, searcher, series
from stalwart.client.endpoints import Api, body, endpoint

E = "/api/v1/experiments"
ExperimentAction = Literal["pause", "activate", "cancel", "kill", "archive", "unarchive"]

CREATE = endpoint("POST", E, experiments.CreatedExperiment, experiments.CreateExperiment)
LIST = endpoint("GET", E, experiments.ExperimentList)
DESCRIBE = endpoint("GET", E + "/{exp_id}", experiments.ExperimentDetail)
PATCH = endpoint("PATCH", E + "/{exp_id}", experiments.ExperimentEnvelope, experiments.PatchExperiment)
DELETE = endpoint("DELETE", E + "/{exp_id}", experiments.DeletedExperiment)
CONTINUE = endpoint("POST", E + "/{exp_id}/continue", experiments.ExperimentEnvelope, experiments.ContinueExperiment)
ACTION = endpoint("POST", E + "/{exp_id}/{action}", experiments.ExperimentEnvelope)
TRIALS = endpoint("GET", E + "/{exp_id}/trials", experiments.TrialList)
CHECKPOINTS = endpoint("GET", E + "/{exp_id}/checkpoints", checkpoints.CheckpointList)
MODEL_DEF = endpoint("GET", E + "/{exp_id}/model_def", experiments.ModelDef)
BEST_METRIC = endpoint("GET", E + "/{exp_id}/searcher/best_searcher_validation_metric", experiments.BestMetric)
GC_POLICY = endpoint("PATCH", E + "/{exp_id}/checkpoint-gc-policy", experiments.GcPolicyChange,
                     experiments.ChangeGcPolicy)
RETAIN_LOGS = endpoint("PUT", E + "/{exp_id}/retain_logs", common.Empty, experiments.RetainLogs)
UPDATE_JOB = endpoint("PATCH", E + "/{exp_id}/job", jobs.JobEnvelope, jobs.UpdateJob)
SERIES = endpoint("GET", E + "/{exp_id}/metrics/series", series.ExperimentSeries)
PREVIEW = endpoint("POST", "/api/v1/searcher/preview", searcher.PreviewAnswer, searcher.PreviewRequest)


class ExperimentsApi(Api):
    def create_experiment(self, config: str, context_b64: str = "", *, activate: bool = True,
                          owner: str | None = None, validate_only: bool = False,
                          parent_id: int | None = None, template: str | None = None) -> experiments.CreatedExperiment:
        """`config`: the experiment config as YAML text; `context_b64`: base64 of the context .tgz; `parent_id`:
        the experiment it is forked from (a secret shown hidden in its config keeps the parent's value);
        `template`: a configuration template the master merges under the config (the merged config is stored)."""
        fields: dict[str, object] = {"config": config, "context": context_b64, "activate": activate}
        if template is not None:
            fields["template"] = template
        if owner is not None:
            fields["owner"] = owner
        if parent_id is not None:
            fields["parent_id"] = parent_id
        if validate_only:
            fields["validate_only"] = True
        return self.call(CREATE, json_body=body(experiments.CreateExperiment, **fields))

    def list_experiments(self, *, limit: int = 200, offset: int = 0, states: list[str] | None = None,
                         labels: list[str] | None = None, name: str | None = None, include_archived: bool = False,
                         owner: str | None = None, workspace: str | None = None, project: str | None = None,
                         sort_by: experiments.SortBy = "id",
                         order_by: experiments.OrderBy = "desc") -> experiments.ExperimentList:
        """One page of experiments, filtered and sorted by the master: `states` (any of), `labels` (all of),
        `name` (a substring), `workspace` and `project` (names), archived ones only with `include_archived`;
        `total` counts every match."""
        return self.call(LIST, params={
            "limit": limit, "offset": offset, "states": states or None, "labels": labels or None, "name": name,
            "include_archived": str(include_archived).lower(), "owner": owner, "workspace": workspace,
            "project": project, "sort_by": sort_by, "order_by": order_by})

    def patch_experiment(self, exp_id: int, *, name: str | None = None, description: str | None = None,
                         notes: str | None = None, labels: list[str] | None = None) -> experiments.ExperimentEnvelope:
        """Change only the fields given; `labels` replaces the whole list."""
        changes = {k: v for k, v in (("name", name), ("description", description), ("notes", notes),
                                     ("labels", labels)) if v is not None}
        return self.call(PATCH, path={"exp_id": exp_id}, json_body=body(experiments.PatchExperiment, **changes))

    def delete_experiment(self, exp_id: int) -> experiments.DeletedExperiment:
        """Delete a terminal experiment: its checkpoints' and TensorBoard files from storage, then its rows (409
        while it runs). The answer lists the checkpoints kept because other experiments use them."""
        return self.call(DELETE, path={"exp_id": exp_id})

    def continue_experiment(self, exp_id: int, overrides: dict[str, Any]) -> experiments.ExperimentEnvelope:
        """Continue a terminal single-trial experiment's trial from its latest checkpoint, with `overrides`
        (a partial config, e.g. a longer searcher.max_length) merged over the stored config."""
        return self.call(CONTINUE, path={"exp_id": exp_id},
                         json_body=body(experiments.ContinueExperiment, overrides=overrides))

    def get_experiment(self, exp_id: int) -> experiments.ExperimentDetail:
        return self.call(DESCRIBE, path={"exp_id": exp_id})

    def experiment_action(self, exp_id: int, action: ExperimentAction) -> experiments.ExperimentEnvelope:
        return self.call(ACTION, path={"exp_id": exp_id, "action": action}, json_body={})

    def experiment_trials(self, exp_id: int) -> experiments.TrialList:
        return self.call(TRIALS, path={"exp_id": exp_id})

    def experiment_checkpoints(self, exp_id: int) -> checkpoints.CheckpointList:
        return self.call(CHECKPOINTS, path={"exp_id": exp_id})

    def experiment_model_def(self, exp_id: int) -> experiments.ModelDef:
        return self.call(MODEL_DEF, path={"exp_id": exp_id})

    def best_validation_metric(self, exp_id: int) -> experiments.BestMetric:
        """The experiment's best searcher metric so far (NotFoundError while it has none)."""
        return self.call(BEST_METRIC, path={"exp_id": exp_id})

    def change_gc_policy(self, exp_id: int, *, save_experiment_best: int, save_trial_best: int,
                         save_trial_latest: int, dry_run: bool = False) -> experiments.GcPolicyChange:
        """Determined's `e set gc-policy`: with `dry_run`, what the policy would delete and keep; otherwise it
        becomes the experiment's checkpoint GC policy and the checkpoints beyond it are deleted (files and rows)."""
        return self.call(GC_POLICY, path={"exp_id": exp_id}, json_body=body(
            experiments.ChangeGcPolicy, save_experiment_best=save_experiment_best, save_trial_best=save_trial_best,
            save_trial_latest=save_trial_latest, dry_run=dry_run))

    def set_log_retention(self, exp_id: int, num_days: int) -> common.Empty:
        """Determined's `e set log-retention`: the ended experiment's trials keep their logs `num_days` days after
        they end (-1: forever)."""
        return self.call(RETAIN_LOGS, path={"exp_id": exp_id}, json_body=body(experiments.RetainLogs,
                                                                             num_days=num_days))

    def update_experiment_job(self, exp_id: int, *, priority: int | None = None, weight: float | None = None,
                              max_slots: int | None = None) -> jobs.JobEnvelope:
        changes = {k: v for k, v in (("priority", priority), ("weight", weight), ("max_slots", max_slots))
                   if v is not None}
        return self.call(UPDATE_JOB, path={"exp_id": exp_id}, json_body=body(jobs.UpdateJob, **changes))

    def experiment_series(self, exp_id: int, *, group: str = "validation", metric: str | None = None,
                          x_axis: series.XAxis | None = None, max_points: int | None = None,
                          trial_ids: list[int] | None = None) -> series.ExperimentSeries:
        """The experiment's trials' series on one x grid (JSON; the UI reads the float32 form)."""
        ids = ",".join(str(t) for t in trial_ids) if trial_ids else None
        return self.call(SERIES, path={"exp_id": exp_id}, params={
            "group": group, "metric": metric, "x": x_axis, "max_points": max_points, "trial_ids": ids})

    def preview_search(self, config: str) -> searcher.PreviewAnswer:
        """What a search over `config` (YAML text) would create, simulated by the master."""
        return self.call(PREVIEW, json_body=body(searcher.PreviewRequest, config=config))
