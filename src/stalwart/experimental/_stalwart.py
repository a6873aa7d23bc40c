"""`Stalwart`: one master's SDK (Determined's `Determined` object); `client`'s functions use a default one."""

from __future__ import annotations

import base64
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from stalwart.api.errors import InvalidRequest, StalwartError
from stalwart.api.models.experiments import OrderBy as ListOrder, SortBy as ListSort
from stalwart.api.states import ExperimentState
from stalwart.context import pack_context
from stalwart.experimental import _master
from stalwart.experimental._config import ConfigSource, config_text, placed
from stalwart.experimental._experiment_list import ExperimentQuery, ExperimentSortBy, list_experiment_models
from stalwart.experimental.checkpoint import Checkpoint, OrderBy
from stalwart.experimental.experiment import Experiment
from stalwart.experimental.metrics import TrialMetrics, iter_legacy_metrics, iter_trial_metrics
from stalwart.experimental.model import Model, ModelSortBy, sort_models
from stalwart.experimental.trial import Trial

PathLike = str | os.PathLike[str]


class Stalwart:
    """The SDK for one master: `Stalwart(master=None, user=None, password=None)` (see `client.login`)."""

    def __init__(self, master: str | None = None, user: str | None = None, password: str | None = None) -> None:
        target = _master.resolve(master, user, password)
        self.master = target.url
        self._client = target.client()

    def close(self) -> None:
        self._client.close()

    def create_experiment(self, config: ConfigSource, model_dir: PathLike | None = None,
                          includes: Iterable[PathLike] | None = None, project_id: int | None = None,
                          template: str | None = None, *, activate: bool = True, workspace: str | None = None,
                          project: str | None = None) -> Experiment:
        """Create and start an experiment from `config` (a dict, a path to a YAML file, or YAML text) with the code
        in `model_dir` (none when None) and the `includes` directories; with `activate=False` it waits, PAUSED,
        for `activate()`. `project_id`, or `workspace` and `project` (names, both or neither), place it, as the
        config's keys of those names do. `template` names a configuration template the master merges under the
        config (the merged config is stored; `stalwart template list` shows them)."""
        if project_id is not None:
            if workspace is not None or project is not None:
                raise InvalidRequest("give project_id, or workspace and project, not both")
            found = self._client.get_project(_id("project_id", project_id))
            workspace, project = found.workspaceName, found.name
        if includes is not None and isinstance(includes, (str, os.PathLike)):
            includes = [includes]
        text = placed(config_text(config), workspace, project)
        with tempfile.TemporaryDirectory(prefix="stalwart-no-code-") as empty:
            packed = pack_context(model_dir if model_dir is not None else empty, list(includes or []))
        reply = self._client.create_experiment(text, base64.b64encode(packed.data).decode(), activate=activate,
                                               template=template)
        if reply.experiment is None:
            raise StalwartError("the master created no experiment (it answered as to a validate-only request)")
        return self.get_experiment(reply.experiment.id)

    def get_experiment(self, experiment_id: int) -> Experiment:
        detail = self._client.get_experiment(_id("experiment_id", experiment_id))
        return Experiment._from_model(self._client, detail.experiment, detail.config)

    def get_trial(self, trial_id: int) -> Trial:
        return Trial._from_model(self._client, self._client.get_trial(_id("trial_id", trial_id)).trial)

    def get_checkpoint(self, uuid: str) -> Checkpoint:
        if not isinstance(uuid, str) or not uuid.strip():
            raise InvalidRequest(f"uuid: expected a checkpoint uuid, got {uuid!r}")
        return Checkpoint._from_model(self._client, self._client.get_checkpoint(uuid.strip()).checkpoint)

    def list_experiments(self, sort_by: ExperimentSortBy | ListSort | None = None,
                         order_by: OrderBy | ListOrder | None = None, experiment_ids: Sequence[int] | None = None,
                         labels: Sequence[str] | None = None, users: Sequence[str] | None = None,
                         states: Sequence[ExperimentState | str] | None = None, name: str | None = None,
                         project_id: int | None = None, *, owner: str | None = None, include_archived: bool = False,
                         limit: int | None = None) -> list[Experiment]:
        """Experiments filtered and sorted (by default newest first): `experiment_ids`, `labels` (all of),
        `users` or `owner` (usernames), `states` (any of), `name` (a substring), `project_id`; archived ones only
        with `include_archived`. `limit`: at most that many."""
        query = ExperimentQuery(sort_by, order_by, experiment_ids, labels, users, states, name, project_id, owner,
                                include_archived, limit)
        return [Experiment._from_model(self._client, e) for e in list_experiment_models(self._client, query)]

    def create_model(self, name: str, description: str = "", metadata: dict[str, Any] | None = None,
                     labels: Sequence[str] | None = None, workspace_name: str | None = None) -> Model:
        """A new model of the registry, in `workspace_name` (default: the Uncategorized workspace)."""
        made = self._client.create_model(name, description=description, metadata=metadata,
                                         labels=list(labels) if labels is not None else None, workspace=workspace_name)
        return Model(self._client, made)

    def get_model(self, identifier: str | int) -> Model:
        """The model with this name, or this id (an int, or a string of digits)."""
        if isinstance(identifier, bool) or not isinstance(identifier, (str, int)) or str(identifier).strip() == "":
            raise InvalidRequest(f"identifier: expected a model name or id, got {identifier!r}")
        return Model(self._client, self._client.get_model(identifier if isinstance(identifier, int)
                                                          else identifier.strip()))

    def get_model_by_id(self, model_id: int) -> Model:
        return self.get_model(_id("model_id", model_id))

    def get_models(self, sort_by: ModelSortBy = ModelSortBy.NAME, order_by: OrderBy = OrderBy.ASC,
                   name: str | None = None, description: str | None = None, model_id: int | None = None,
                   workspace_names: Sequence[str] | None = None, workspace_ids: Sequence[int] | None = None, *,
                   archived: bool | None = None) -> list[Model]:
        """The models the caller may view: those whose name and description hold `name` and `description`, of the
        workspaces named (any of them), archived or not (`archived`: only those); sorted by `sort_by`."""
        found = [Model(self._client, m) for m in self._client.list_models(archived=archived)]
        name, description = (name or "").lower(), (description or "").lower()
        kept = [m for m in found if name in m.name.lower() and description in m.description.lower()
                and (model_id is None or m.model_id == model_id)
                and (workspace_names is None or m.workspace_name in workspace_names)
                and (workspace_ids is None or m.workspace_id in workspace_ids)]
        return sort_models(kept, sort_by, order_by)

    list_models = get_models
    """Determined's newer name of `get_models`."""

    def get_model_labels(self) -> list[str]:
        """Every label of the models the caller may view, the most used first."""
        counts = Counter(label for m in self._client.list_models() for label in m.labels)
        return [label for label, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]

    def get_session_username(self) -> str:
        """The name of the user this SDK object acts as."""
        return self._client.me().username

    def logout(self) -> None:
        """End this SDK object's session on the master: its token stops working (so does the CLI's login for that
        master when the CLI kept this same session)."""
        self._client.logout()

    def iter_trials_metrics(self, trial_ids: Iterable[int], group: str) -> Iterator[TrialMetrics]:
        """The reports of one group of each of these trials, trial by trial, by steps."""
        if not isinstance(group, str) or not group:
            raise InvalidRequest(f"group: expected a metric group name such as 'validation', got {group!r}")
        for trial_id in trial_ids:
            yield from iter_trial_metrics(self._client, _id("trial_id", trial_id), group)

    stream_trials_metrics = iter_trials_metrics
    """Determined's deprecated name of `iter_trials_metrics`."""

    def stream_trials_training_metrics(self, trial_ids: Iterable[int]) -> Iterator[TrialMetrics]:
        """Determined's deprecated `iter_trials_metrics(trial_ids, "training")`, as `TrainingMetrics`."""
        return iter_legacy_metrics(self._client, [_id("trial_id", t) for t in trial_ids], "training")

    def stream_trials_validation_metrics(self, trial_ids: Iterable[int]) -> Iterator[TrialMetrics]:
        """Determined's deprecated `iter_trials_metrics(trial_ids, "validation")`, as `ValidationMetrics`."""
        return iter_legacy_metrics(self._client, [_id("trial_id", t) for t in trial_ids], "validation")


def _id(what: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRequest(f"{what}: expected an integer id >= 0, got {value!r}")
    return value
