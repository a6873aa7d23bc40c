"""`Trial`: one trial of an experiment: its logs, checkpoints and metrics, and killing it."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from typing import Any

from stalwart.api.errors import InvalidRequest
from stalwart.api.models import trials as models
from stalwart.api.states import TrialState
from stalwart.client import Client
from stalwart.experimental.checkpoint import Checkpoint, OrderBy, SortBy, check_order, listed, sort_checkpoints
from stalwart.experimental.metrics import TrialMetrics, iter_trial_metrics


class TrialSortBy(enum.Enum):
    """A trial attribute to sort a list of trials by."""

    ID = "ID"
    START_TIME = "START_TIME"
    END_TIME = "END_TIME"
    STATE = "STATE"
    BATCHES_PROCESSED = "BATCHES_PROCESSED"
    RESTARTS = "RESTARTS"


class Trial:
    """A trial. Attributes (`experiment_id`, `hparams`, `state`, `steps_completed`, `latest_validation`) are
    cached; `reload()` refreshes them."""

    def __init__(self, client: Client, trial_id: int) -> None:
        self._client = client
        self.id = trial_id
        self.experiment_id: int | None = None
        self.hparams: dict[str, Any] | None = None
        self.state: TrialState | None = None
        self.steps_completed: int | None = None
        self.restarts: int | None = None
        self.created_at: float | None = None
        self.ended_at: float | None = None
        self.latest_validation: dict[str, Any] | None = None

    @classmethod
    def _from_model(cls, client: Client, model: models.Trial) -> Trial:
        trial = cls(client, model.id)
        trial._hydrate(model)
        return trial

    def _hydrate(self, model: models.Trial) -> None:
        self.experiment_id = model.experiment_id
        self.hparams = model.hparams
        self.state = model.state
        self.steps_completed = model.steps_completed
        self.restarts = model.restarts
        self.created_at = model.created_at
        self.ended_at = model.ended_at
        self.latest_validation = model.latest_validation.metrics if model.latest_validation else None

    def reload(self) -> None:
        self._hydrate(self._client.get_trial(self.id).trial)

    def iter_logs(self, follow: bool = False, *, head: int | None = None, tail: int | None = None,
                  levels: list[str] | None = None, since: float | str | None = None,
                  search_text: str | None = None) -> Iterator[str]:
        """The trial's log lines (text), filtered by the master: `levels` (any of, e.g. ["ERROR"]), `since`
        (epoch seconds or an ISO 8601 time), `search_text` (a substring), then the first `head` or last `tail`.
        With `follow`, new lines as they come until the trial ends (not with `head` or `tail`)."""
        for name, value in (("head", head), ("tail", tail)):
            if value is not None and value < 0:
                raise InvalidRequest(f"{name} must be non-negative, got {value}")
        if follow and (head is not None or tail is not None):
            raise InvalidRequest("follow cannot be combined with head or tail")
        for entry in self._client.stream_trial_logs(self.id, follow=follow, levels=levels, since=since,
                                                    grep=search_text, head=head, tail=tail):
            yield entry.log

    logs = iter_logs
    """Determined's older name of `iter_logs`."""

    def kill(self) -> None:
        self._client.kill_trial(self.id)

    def list_checkpoints(self, sort_by: SortBy | None = None, order_by: OrderBy | None = None,
                         max_results: int | None = None) -> list[Checkpoint]:
        """The trial's checkpoints, by default best first by the experiment's searcher metric (see
        `Experiment.list_checkpoints`)."""
        check_order(sort_by, order_by, max_results)
        if self.experiment_id is None:
            self.reload()
        assert self.experiment_id is not None
        detail = self._client.get_experiment(self.experiment_id)
        found = self._client.trial_checkpoints(self.id).checkpoints
        return sort_checkpoints(listed(self._client, found), sort_by, order_by,
                                searcher_metric=detail.experiment.metric,
                                smaller_is_better=detail.experiment.smaller_is_better, max_results=max_results)

    def iter_metrics(self, group: str) -> Iterator[TrialMetrics]:
        """The trial's reports of one group ("training", "validation", or any group the trial reported), by steps."""
        if not isinstance(group, str) or not group:
            raise InvalidRequest(f"group: expected a metric group name such as 'validation', got {group!r}")
        return iter_trial_metrics(self._client, self.id, group)

    def __repr__(self) -> str:
        return f"Trial(id={self.id})"


_TRIAL_KEYS: dict[TrialSortBy, Callable[[Trial], Any]] = {
    TrialSortBy.ID: lambda t: t.id,
    TrialSortBy.START_TIME: lambda t: t.created_at,
    TrialSortBy.END_TIME: lambda t: t.ended_at,
    TrialSortBy.STATE: lambda t: t.state.value if t.state else None,
    TrialSortBy.BATCHES_PROCESSED: lambda t: t.steps_completed,
    TrialSortBy.RESTARTS: lambda t: t.restarts,
}


def sort_trials(trials: list[Trial], sort_by: TrialSortBy, order_by: OrderBy) -> list[Trial]:
    """Trials by one attribute; those without it (a trial that has not ended, for END_TIME) come last."""
    if not isinstance(sort_by, TrialSortBy):
        raise InvalidRequest(f"sort_by: expected a TrialSortBy, got {sort_by!r}")
    if not isinstance(order_by, OrderBy):
        raise InvalidRequest(f"order_by: expected OrderBy.ASC or OrderBy.DESC, got {order_by!r}")
    key = _TRIAL_KEYS[sort_by]
    present = [t for t in trials if key(t) is not None]
    missing = [t for t in trials if key(t) is None]
    return sorted(present, key=key, reverse=order_by.value == "DESC") + missing
