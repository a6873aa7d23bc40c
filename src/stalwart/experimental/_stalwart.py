"""`Stalwart`: one master's SDK (Determined's `Determined` object); `client`'s functions use a default one."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from stalwart.api.errors import InvalidRequest, StalwartError
from stalwart.api.models.experiments import OrderBy as ListOrder, SortBy as ListSort
from stalwart.api.states import ExperimentState
from stalwart.context import pack_context
from stalwart.experimental import _master
from stalwart.experimental._config import ConfigSource, config_text, placed
from stalwart.experimental.checkpoint import Checkpoint, OrderBy
from stalwart.experimental.experiment import Experiment
from stalwart.experimental.metrics import TrialMetrics, iter_trial_metrics
from stalwart.experimental.model import Model, ModelSortBy, sort_models
from stalwart.experimental.trial import Trial

LIST_PAGE = 200

PathLike = str | os.PathLike[str]


class Stalwart:
    """The SDK for one master: `Stalwart(master=None, user=None, password=None)` (see `client.login`)."""

    def __init__(self, master: str | None = None, user: str | None = None, password: str | None = None) -> None:
        target = _master.resolve(master, user, password)
        self.master = target.url
        self._client = target.client()

    def close(self) -> None:
        self._client.close()

    def create_experiment(self, config: ConfigSource, model_dir: PathLike, includes: Iterable[PathLike] | None = None,
                          template: str | None = None, *, activate: bool = True, workspace: str | None = None,
                          project: str | None = None) -> Experiment:
        """Create and start an experiment from `config` (a dict, a path to a YAML file, or YAML text) with the code
        in `model_dir` (and the `includes` directories); with `activate=False` it waits, PAUSED, for `activate()`.
        `workspace` and `project` (both or neither) place it, as the config's keys of those names do.
        Templates are not supported yet: `template` is refused."""
        if template is not None:
            raise InvalidRequest(f"template {template!r}: config templates are not supported by Stalwart yet; "
                                 f"merge the template's keys into the config instead")
        if includes is not None and isinstance(includes, (str, os.PathLike)):
            includes = [includes]
        text = placed(config_text(config), workspace, project)
        packed = pack_context(model_dir, list(includes or []))
        reply = self._client.create_experiment(text, base64.b64encode(packed.data).decode(), activate=activate)
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

    def list_experiments(self, *, states: Sequence[ExperimentState | str] | None = None,
                         labels: Sequence[str] | None = None, name: str | None = None, owner: str | None = None,
                         include_archived: bool = False, sort_by: ListSort = "id", order_by: ListOrder = "desc",
                         limit: int | None = None) -> list[Experiment]:
        """Experiments filtered and sorted by the master: `states` (any of), `labels` (all of), `name` (a
        substring), `owner`; archived ones only with `include_archived`. `limit`: at most that many."""
        if limit is not None and limit < 0:
            raise InvalidRequest(f"limit: expected an integer >= 0, got {limit}")
        wanted_states = [s.value if isinstance(s, ExperimentState) else str(s) for s in states] if states else None
        found: list[Experiment] = []
        while limit is None or len(found) < limit:
            page_size = LIST_PAGE if limit is None else min(LIST_PAGE, limit - len(found))
            page = self._client.list_experiments(
                limit=page_size, offset=len(found), states=wanted_states, labels=list(labels) if labels else None,
                name=name, include_archived=include_archived, owner=owner, sort_by=sort_by, order_by=order_by)
            found.extend(Experiment._from_model(self._client, e) for e in page.experiments)
            if len(page.experiments) < page_size or len(found) >= page.total:
                break
        return found

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

    def get_models(self, sort_by: ModelSortBy = ModelSortBy.NAME, order_by: OrderBy = OrderBy.ASC, name: str = "",
                   description: str = "", model_id: int | None = None, workspace_names: Sequence[str] | None = None,
                   workspace_ids: Sequence[int] | None = None, *, archived: bool | None = None) -> list[Model]:
        """The models the caller may view: those whose name and description hold `name` and `description`, of the
        workspaces named (any of them), archived or not (`archived`: only those); sorted by `sort_by`."""
        found = [Model(self._client, m) for m in self._client.list_models(archived=archived)]
        kept = [m for m in found if name.lower() in m.name.lower() and description.lower() in m.description.lower()
                and (model_id is None or m.model_id == model_id)
                and (workspace_names is None or m.workspace_name in workspace_names)
                and (workspace_ids is None or m.workspace_id in workspace_ids)]
        return sort_models(kept, sort_by, order_by)

    def iter_trials_metrics(self, trial_ids: Iterable[int], group: str) -> Iterator[TrialMetrics]:
        """The reports of one group of each of these trials, trial by trial, by steps."""
        if not isinstance(group, str) or not group:
            raise InvalidRequest(f"group: expected a metric group name such as 'validation', got {group!r}")
        for trial_id in trial_ids:
            yield from iter_trial_metrics(self._client, _id("trial_id", trial_id), group)


def _id(what: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRequest(f"{what}: expected an integer id >= 0, got {value!r}")
    return value
