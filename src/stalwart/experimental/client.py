"""The Python SDK, in Determined's shape: `from stalwart.experimental import client` (inside a trial, also
`from determined.experimental import client`, the same module).

    exp = client.create_experiment("grid.yaml", "model_dir")
    exp.wait()
    best = exp.top_checkpoint()
    path = best.download()

Every function uses one default connection, made on first use: the master of `login(master=...)`, else
STALWART_MASTER, DET_MASTER, the running local cluster. Inside a trial no login is needed: the trial's
environment names its master and holds the trial's own credentials (see `_master`). To talk to several
masters, make one `Stalwart(master=...)` object each: it has the same functions.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from stalwart.api.models.experiments import OrderBy as ListOrder, SortBy as ListSort
from stalwart.api.states import ExperimentState, TrialState
from stalwart.experimental._config import ConfigSource
from stalwart.experimental._experiment_list import ExperimentSortBy
from stalwart.experimental._logs import LogLevel
from stalwart.experimental._stalwart import Stalwart
from stalwart.experimental.checkpoint import Checkpoint, CheckpointSortBy, CheckpointState, DownloadMode, OrderBy
from stalwart.experimental.experiment import Experiment
from stalwart.experimental.metrics import TrainingMetrics, TrialMetrics, ValidationMetrics, metric_rows, metrics_frame
from stalwart.experimental.model import Model, ModelOrderBy, ModelSortBy, ModelVersion
from stalwart.experimental.trial import Trial, TrialSortBy

Determined = Stalwart
"""Determined's name for the SDK object."""

CheckpointOrderBy = TrialOrderBy = ExperimentOrderBy = OrderBy
"""Determined's names for the order of its lists: all one `OrderBy` (ASC / ASCENDING, DESC / DESCENDING)."""

_default: Stalwart | None = None


def login(master: str | None = None, user: str | None = None, password: str | None = None) -> Stalwart:
    """Set the master every function of this module talks to, and return its `Stalwart` object.

    `master`: the master's address; else STALWART_MASTER, then DET_MASTER, then the local cluster. `user` and
    `password`: log in as that user (its session is kept in the auth file, $STALWART_HOME/auth.json); without
    them, STALWART_USER/DET_USER with STALWART_PASSWORD/DET_PASS, a task's owner session, or the session the CLI
    keeps for that master (`stalwart user login`, `stalwart up`). Calling `login` is only needed to pick another
    master or user: the first call of any function logs in this way by itself. A second `login` replaces the
    first for the functions of this module (objects already returned keep their master and session).
    """
    global _default
    _default = Stalwart(master, user, password)
    return _default


def _session() -> Stalwart:
    global _default
    if _default is None:
        _default = Stalwart()
    return _default


def create_experiment(config: ConfigSource, model_dir: str | os.PathLike[str] | None = None,
                      includes: Iterable[str | os.PathLike[str]] | None = None, project_id: int | None = None,
                      template: str | None = None, *, activate: bool = True, workspace: str | None = None,
                      project: str | None = None) -> Experiment:
    """Create and start an experiment: `config` as a dict, a path to a YAML file or YAML text; the code in
    `model_dir` (plus `includes`); `activate=False` leaves it PAUSED; `project_id`, or `workspace` and `project`
    (names, both or neither), place it; `template` names a configuration template merged under the config."""
    return _session().create_experiment(config, model_dir, includes, project_id, template, activate=activate,
                                        workspace=workspace, project=project)


def get_experiment(experiment_id: int) -> Experiment:
    return _session().get_experiment(experiment_id)


def get_trial(trial_id: int) -> Trial:
    return _session().get_trial(trial_id)


def get_checkpoint(uuid: str) -> Checkpoint:
    return _session().get_checkpoint(uuid)


def list_experiments(sort_by: ExperimentSortBy | ListSort | None = None, order_by: OrderBy | ListOrder | None = None,
                     experiment_ids: Sequence[int] | None = None, labels: Sequence[str] | None = None,
                     users: Sequence[str] | None = None, states: Sequence[ExperimentState | str] | None = None,
                     name: str | None = None, project_id: int | None = None, *, owner: str | None = None,
                     include_archived: bool = False, limit: int | None = None) -> list[Experiment]:
    """Experiments filtered and sorted (see `Stalwart.list_experiments`)."""
    return _session().list_experiments(sort_by, order_by, experiment_ids, labels, users, states, name, project_id,
                                       owner=owner, include_archived=include_archived, limit=limit)


def create_model(name: str, description: str = "", metadata: dict[str, Any] | None = None,
                 labels: Sequence[str] | None = None, workspace_name: str | None = None) -> Model:
    """A new model of the registry (default workspace: Uncategorized); `.register_version(uuid)` adds versions."""
    return _session().create_model(name, description, metadata, labels, workspace_name)


def get_model(identifier: str | int) -> Model:
    """A model of the registry by its name or id."""
    return _session().get_model(identifier)


def get_model_by_id(model_id: int) -> Model:
    return _session().get_model_by_id(model_id)


def get_models(sort_by: ModelSortBy = ModelSortBy.NAME, order_by: OrderBy = OrderBy.ASC, name: str | None = "",
               description: str | None = "", model_id: int | None = None, workspace_names: Sequence[str] | None = None,
               workspace_ids: Sequence[int] | None = None) -> list[Model]:
    """The models the caller may view, filtered and sorted (see `Stalwart.get_models`)."""
    return _session().get_models(sort_by, order_by, name, description, model_id, workspace_names, workspace_ids)


def list_models(sort_by: ModelSortBy = ModelSortBy.NAME, order_by: OrderBy = OrderBy.ASC, name: str | None = None,
                description: str | None = None, model_id: int | None = None,
                workspace_names: Sequence[str] | None = None,
                workspace_ids: Sequence[int] | None = None) -> list[Model]:
    """The models the caller may view, filtered and sorted (Determined's newer name of `get_models`)."""
    return _session().get_models(sort_by, order_by, name, description, model_id, workspace_names, workspace_ids)


def get_model_labels() -> list[str]:
    """Every label of the models the caller may view, the most used first."""
    return _session().get_model_labels()


def get_session_username() -> str:
    """The name of the user the functions of this module act as."""
    return _session().get_session_username()


def logout() -> None:
    """End the session of the functions of this module; the next call logs in again (see `login`)."""
    global _default
    if _default is not None:
        _default.logout()
        _default.close()
        _default = None


def iter_trials_metrics(trial_ids: Iterable[int], group: str) -> Iterator[TrialMetrics]:
    """The reports of one metric group of each of these trials; `metrics_frame(...)` makes them a DataFrame."""
    return _session().iter_trials_metrics(trial_ids, group)


def stream_trials_metrics(trial_ids: Iterable[int], group: str) -> Iterator[TrialMetrics]:
    """Determined's deprecated name of `iter_trials_metrics`."""
    return _session().iter_trials_metrics(trial_ids, group)


def stream_trials_training_metrics(trial_ids: Iterable[int]) -> Iterator[TrialMetrics]:
    """Determined's deprecated `iter_trials_metrics(trial_ids, "training")`, as `TrainingMetrics`."""
    return _session().stream_trials_training_metrics(trial_ids)


def stream_trials_validation_metrics(trial_ids: Iterable[int]) -> Iterator[TrialMetrics]:
    """Determined's deprecated `iter_trials_metrics(trial_ids, "validation")`, as `ValidationMetrics`."""
    return _session().stream_trials_validation_metrics(trial_ids)


__all__ = [
    "Checkpoint", "CheckpointOrderBy", "CheckpointSortBy", "CheckpointState", "Determined", "DownloadMode",
    "Experiment", "ExperimentOrderBy", "ExperimentSortBy", "ExperimentState", "LogLevel", "Model", "ModelOrderBy",
    "ModelSortBy", "ModelVersion", "OrderBy", "Stalwart", "TrainingMetrics", "Trial", "TrialMetrics", "TrialOrderBy",
    "TrialSortBy", "TrialState", "ValidationMetrics", "create_experiment", "create_model", "get_checkpoint",
    "get_experiment", "get_model", "get_model_by_id", "get_model_labels", "get_models", "get_session_username",
    "get_trial", "iter_trials_metrics", "list_experiments", "list_models", "login", "logout", "metric_rows",
    "metrics_frame", "stream_trials_metrics", "stream_trials_training_metrics", "stream_trials_validation_metrics",
]
