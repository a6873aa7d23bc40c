"""`Experiment`: wait for it, pause, activate, kill, archive or delete it, list its trials and checkpoints."""

from __future__ import annotations

import base64
import os
import pathlib
import time
from collections.abc import Iterable, Iterator
from typing import Any

from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.api.metric_values import number
from stalwart.api.models import experiments as models
from stalwart.api.states import ExperimentState
from stalwart.client import Client
from stalwart.experimental.checkpoint import (
    Checkpoint,
    CheckpointState,
    OrderBy,
    SortBy,
    check_order,
    listed,
    sort_checkpoints,
)
from stalwart.experimental.trial import Trial, TrialSortBy, sort_trials


class Experiment:
    """An experiment. Attributes (`name`, `state`, `labels`, `config`...) are cached: `reload()` refreshes them,
    and `wait()` and the setters update them. `config` is the stored experiment config."""

    def __init__(self, client: Client, experiment_id: int) -> None:
        self._client = client
        self._id = experiment_id
        self.name: str | None = None
        self.description: str | None = None
        self.notes: str | None = None
        self.labels: set[str] | None = None
        self.owner: str | None = None
        self.state: ExperimentState | None = None
        self.archived: bool | None = None
        self.progress: float | None = None
        self.searcher_metric: str | None = None
        self.smaller_is_better: bool = True
        self.config: dict[str, Any] | None = None
        self.workspace: str | None = None
        self.project: str | None = None
        self.project_id: int | None = None

    @property
    def id(self) -> int:
        return self._id

    @classmethod
    def _from_model(cls, client: Client, model: models.Experiment, config: dict[str, Any] | None = None) -> Experiment:
        exp = cls(client, model.id)
        exp._hydrate(model)
        exp.config = config
        return exp

    def _hydrate(self, model: models.Experiment) -> None:
        self.name = model.name
        self.description = model.description
        self.notes = model.notes
        self.labels = set(model.labels)
        self.owner = model.owner
        self.state = model.state
        self.archived = model.archived
        self.progress = model.progress
        self.searcher_metric = model.metric
        self.smaller_is_better = model.smaller_is_better
        self.workspace = _text(getattr(model, "workspace", None))
        self.project = _text(getattr(model, "project", None))
        self.project_id = model.project_id

    def reload(self) -> None:
        detail = self._client.get_experiment(self._id)
        self._hydrate(detail.experiment)
        self.config = detail.config

    # -- lifecycle ----------------------------------------------------------------------------------
    def activate(self) -> None:
        self._hydrate(self._client.experiment_action(self._id, "activate").experiment)

    def pause(self) -> None:
        self._hydrate(self._client.experiment_action(self._id, "pause").experiment)

    def cancel(self) -> None:
        self._hydrate(self._client.experiment_action(self._id, "cancel").experiment)

    def kill(self) -> None:
        self._hydrate(self._client.experiment_action(self._id, "kill").experiment)

    def archive(self) -> None:
        self._hydrate(self._client.experiment_action(self._id, "archive").experiment)

    def unarchive(self) -> None:
        self._hydrate(self._client.experiment_action(self._id, "unarchive").experiment)

    def move_to_project(self, workspace_name: str, project_name: str) -> None:
        """Move the experiment into project `project_name` of workspace `workspace_name` (its roles then apply)."""
        target = self._client.project_by_name(workspace_name, project_name)
        self._client.move_experiment(self._id, target.id)
        self.reload()

    def delete(self) -> None:
        """Delete the experiment: its checkpoints' files from storage, then its records. Refused (InvalidStateError)
        until the experiment has ended."""
        self._client.delete_experiment(self._id)

    def download_code(self, output_dir: str | os.PathLike[str] | None = None) -> str:
        """Save the experiment's code (the context archive it was created with) as `exp-<id>_model_def.tar.gz` in
        `output_dir` (made if missing; default: the current directory), and return that file's path."""
        archive = base64.b64decode(self._client.experiment_model_def(self._id).b64Tgz)
        folder = pathlib.Path(output_dir).expanduser() if output_dir is not None else pathlib.Path()
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"exp-{self._id}_model_def.tar.gz"
        target.write_bytes(archive)
        return str(target)

    @property
    def workspace_id(self) -> int | None:
        """The id of the experiment's workspace (asked of the master, through the experiment's project)."""
        if self.project_id is None:
            self.reload()
        return None if self.project_id is None else self._client.get_project(self.project_id).workspaceId

    def wait(self, interval: float = 5.0, timeout: float | None = None) -> ExperimentState:
        """Wait until the experiment ends (COMPLETED, CANCELED or ERROR) and return that state. A paused experiment
        would wait forever: InvalidStateError. `timeout` (seconds): TimeoutError when it runs out first."""
        if interval <= 0:
            raise InvalidRequest(f"interval: expected seconds > 0, got {interval}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.reload()
            assert self.state is not None
            if self.state.terminal:
                return self.state
            if self.state is ExperimentState.PAUSED:
                raise InvalidStateError(f"experiment {self._id} is PAUSED: activate it before waiting for it to end")
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"experiment {self._id} is still {self.state.value} after {timeout} s")
            time.sleep(interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic())))

    # -- editing -----------------------------------------------------------------------------------
    def set_name(self, name: str) -> None:
        self._hydrate(self._client.patch_experiment(self._id, name=name).experiment)

    def set_description(self, description: str) -> None:
        self._hydrate(self._client.patch_experiment(self._id, description=description).experiment)

    def set_notes(self, notes: str) -> None:
        self._hydrate(self._client.patch_experiment(self._id, notes=notes).experiment)

    def set_labels(self, labels: Iterable[str]) -> None:
        """Replace the experiment's labels with these."""
        if isinstance(labels, str):
            raise InvalidRequest(f"labels: expected a set or list of labels, got the string {labels!r}")
        self._hydrate(self._client.patch_experiment(self._id, labels=sorted(set(labels))).experiment)

    def add_label(self, label: str) -> None:
        self.reload()
        self.set_labels((self.labels or set()) | {label})

    def remove_label(self, label: str) -> None:
        self.reload()
        self.set_labels((self.labels or set()) - {label})

    # -- trials and checkpoints ----------------------------------------------------------------------
    def list_trials(self, sort_by: TrialSortBy = TrialSortBy.ID, order_by: OrderBy = OrderBy.ASC) -> list[Trial]:
        """The experiment's trials, sorted (by id by default); `iter_trials` gives them one by one."""
        found = [Trial._from_model(self._client, t) for t in self._client.experiment_trials(self._id).trials]
        return sort_trials(found, sort_by, order_by)

    get_trials = list_trials
    """Determined's older name of `list_trials`."""

    def iter_trials(self, sort_by: TrialSortBy = TrialSortBy.ID, order_by: OrderBy = OrderBy.ASC,
                    limit: int | None = None) -> Iterator[Trial]:
        """The experiment's trials one by one, sorted (by id by default); at most `limit` of them."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidRequest(f"limit: expected an integer >= 0 (or None for all trials), got {limit!r}")
        trials = self.list_trials(sort_by, order_by)
        return iter(trials if limit is None else trials[:limit])

    def await_first_trial(self, interval: float = 0.1, timeout: float | None = None) -> Trial:
        """Wait until the experiment has a trial, and return it. InvalidStateError if it ends without one;
        TimeoutError when `timeout` (seconds) runs out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            detail = self._client.get_experiment(self._id)
            if detail.trials:
                first = min(detail.trials, key=lambda t: (t.created_at, t.id))
                return Trial._from_model(self._client, first)
            if detail.experiment.state.terminal:
                raise InvalidStateError(f"experiment {self._id} ended {detail.experiment.state.value} without a trial")
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"experiment {self._id} has no trial after {timeout} s")
            time.sleep(interval)

    def list_checkpoints(self, sort_by: SortBy | None = None, order_by: OrderBy | None = None,
                         max_results: int | None = None) -> list[Checkpoint]:
        """The experiment's checkpoints, sorted. `sort_by` and `order_by` go together: a `CheckpointSortBy` or
        the name of a validation metric, with `OrderBy.ASC` or `OrderBy.DESC`. Neither: by the searcher's
        metric, best first. Checkpoints without the metric at their steps come last."""
        check_order(sort_by, order_by, max_results)
        if self.searcher_metric is None:
            self.reload()
        found = self._client.experiment_checkpoints(self._id).checkpoints
        return sort_checkpoints(listed(self._client, found), sort_by, order_by, searcher_metric=self.searcher_metric,
                                smaller_is_better=self.smaller_is_better, max_results=max_results)

    def top_checkpoint(self, sort_by: str | None = None, smaller_is_better: bool | None = None) -> Checkpoint:
        """The completed checkpoint with the best validation metric: the searcher's metric, or `sort_by` (a
        validation metric name; `smaller_is_better` then says which way is better, by default as the searcher's)."""
        best = self.top_n_checkpoints(1, sort_by, smaller_is_better)
        if not best:
            raise InvalidStateError(f"experiment {self._id} has no completed checkpoint with a validation metric")
        return best[0]

    def _metric_order(self, sort_by: str | None, smaller_is_better: bool | None) -> tuple[str, OrderBy | None]:
        """The metric checkpoints are ranked by, and the order to give `list_checkpoints` with `sort_by`."""
        if self.searcher_metric is None:
            self.reload()
        order_by = None
        if sort_by is not None:
            smaller = self.smaller_is_better if smaller_is_better is None else smaller_is_better
            order_by = OrderBy.ASC if smaller else OrderBy.DESC
        metric = sort_by or self.searcher_metric
        if metric is None:
            raise InvalidRequest("the experiment's searcher has no metric: give sort_by (a validation metric name)")
        return metric, order_by

    def top_n_checkpoints(self, limit: int, sort_by: str | None = None,
                          smaller_is_better: bool | None = None) -> list[Checkpoint]:
        """The best completed checkpoint of each of the `limit` best trials, best first, by the searcher's metric or
        `sort_by` (a validation metric name; `smaller_is_better` says which way is better, by default as the
        searcher's). Determined deprecates it for `list_checkpoints(..., max_results=n)`."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidRequest(f"limit: expected an integer >= 0, got {limit!r}")
        metric, order_by = self._metric_order(sort_by, smaller_is_better)
        best = [c for c in self.list_checkpoints(sort_by, order_by) if c.state is CheckpointState.COMPLETED
                and number((c.validation_metrics or {}).get(metric)) is not None]
        return _best_of_each_trial(best)[:limit]

    def __repr__(self) -> str:
        return f"Experiment(id={self._id})"


def _best_of_each_trial(ranked: list[Checkpoint]) -> list[Checkpoint]:
    """The first checkpoint of each trial in this ranking, in its order."""
    seen: set[int | None] = set()
    kept = []
    for ckpt in ranked:
        if ckpt.trial_id not in seen:
            seen.add(ckpt.trial_id)
            kept.append(ckpt)
    return kept


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
