"""`Trial`: one trial of an experiment: its logs, checkpoints and metrics, and killing it."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.api.models import trials as models
from stalwart.api.states import TrialState
from stalwart.client import Client
from stalwart.experimental._logs import LocalFilters, LogLevel, epoch_seconds, levels_from, trial_log_lines
from stalwart.experimental.checkpoint import (
    Checkpoint,
    CheckpointSortBy,
    OrderBy,
    SortBy,
    check_order,
    listed,
    sort_checkpoints,
)
from stalwart.experimental.metrics import TrialMetrics, iter_legacy_metrics, iter_trial_metrics

if TYPE_CHECKING:
    from stalwart.experimental.experiment import Experiment


class TrialSortBy(enum.Enum):
    """A trial attribute to sort a list of trials by."""

    ID = "ID"
    START_TIME = "START_TIME"
    END_TIME = "END_TIME"
    STATE = "STATE"
    BATCHES_PROCESSED = "BATCHES_PROCESSED"
    RESTARTS = "RESTARTS"
    DURATION = "DURATION"


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
                  container_ids: list[str] | None = None, rank_ids: list[int] | None = None,
                  stdtypes: list[str] | None = None, min_level: LogLevel | str | None = None,
                  timestamp_before: float | str | None = None, timestamp_after: float | str | None = None,
                  sources: list[str] | None = None, search_text: str | None = None,
                  levels: list[str] | None = None, since: float | str | None = None) -> Iterator[str]:
        """The trial's log lines (text), filtered: `min_level` (that level and above) or `levels` (any of, e.g.
        ["ERROR"]), `timestamp_after` or `since` and `timestamp_before` (epoch seconds or ISO 8601 times),
        `rank_ids`, `stdtypes` ("stdout", "stderr"), `sources`, `search_text` (a substring); then the first
        `head` or last `tail`. With `follow`, new lines as they come until the trial ends (not with `head` or
        `tail`). `container_ids` is refused: Stalwart's log lines name no container."""
        for name, value in (("head", head), ("tail", tail)):
            if value is not None and value < 0:
                raise InvalidRequest(f"{name} must be non-negative, got {value}")
        if follow and (head is not None or tail is not None):
            raise InvalidRequest("follow cannot be combined with head or tail")
        if container_ids is not None:
            raise InvalidRequest("container_ids: Stalwart's log lines name no container; filter by rank_ids instead")
        local = LocalFilters(rank_ids, stdtypes, sources, epoch_seconds("timestamp_before", timestamp_before))
        return trial_log_lines(self._client, self.id, follow=follow, head=head, tail=tail,
                               levels=levels_from(levels, min_level),
                               since=timestamp_after if timestamp_after is not None else since,
                               search_text=search_text, local=local)

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

    def get_checkpoints(self, sort_by: SortBy | None = None, order_by: OrderBy | None = None) -> list[Checkpoint]:
        """Determined's deprecated `list_checkpoints` without `max_results`."""
        return self.list_checkpoints(sort_by, order_by)

    def top_checkpoint(self, sort_by: str | None = None, smaller_is_better: bool | None = None) -> Checkpoint:
        """The trial's best checkpoint by the searcher's metric, or by `sort_by` (a validation metric name; then
        larger is better unless `smaller_is_better`, as in Determined). None: InvalidStateError."""
        order_by = None if not sort_by else OrderBy.ASC if smaller_is_better else OrderBy.DESC
        return self._first_checkpoint(sort_by or None, order_by)

    def select_checkpoint(self, latest: bool = False, best: bool = False, uuid: str | None = None,
                          sort_by: str | None = None, smaller_is_better: bool | None = None) -> Checkpoint:
        """One checkpoint: the `latest`, the `best` (see `top_checkpoint`) or the one of this `uuid`; exactly one
        of the three."""
        if [bool(latest), bool(best), uuid is not None].count(True) != 1:
            raise InvalidRequest("select_checkpoint: give exactly one of latest=True, best=True or uuid")
        if sort_by is not None and not best:
            raise InvalidRequest("select_checkpoint: sort_by and smaller_is_better go only with best=True")
        if uuid is not None:
            return Checkpoint._from_model(self._client, self._client.get_checkpoint(uuid).checkpoint)
        if latest:
            return self._first_checkpoint(CheckpointSortBy.BATCH_NUMBER, OrderBy.DESC)
        return self.top_checkpoint(sort_by, smaller_is_better)

    def _first_checkpoint(self, sort_by: SortBy | None, order_by: OrderBy | None) -> Checkpoint:
        found = self.list_checkpoints(sort_by, order_by, max_results=1)
        if not found:
            raise InvalidStateError(f"trial {self.id} has no checkpoint that meets the criteria")
        return found[0]

    def get_experiment(self) -> Experiment:
        """The trial's experiment."""
        from stalwart.experimental.experiment import Experiment  # the experiment module imports this one

        if self.experiment_id is None:
            self.reload()
        assert self.experiment_id is not None
        detail = self._client.get_experiment(self.experiment_id)
        return Experiment._from_model(self._client, detail.experiment, detail.config)

    def iter_metrics(self, group: str) -> Iterator[TrialMetrics]:
        """The trial's reports of one group ("training", "validation", or any group the trial reported), by steps."""
        if not isinstance(group, str) or not group:
            raise InvalidRequest(f"group: expected a metric group name such as 'validation', got {group!r}")
        return iter_trial_metrics(self._client, self.id, group)

    stream_metrics = iter_metrics
    """Determined's deprecated name of `iter_metrics`."""

    def stream_training_metrics(self) -> Iterator[TrialMetrics]:
        """Determined's deprecated `iter_metrics("training")`, as `TrainingMetrics`."""
        return iter_legacy_metrics(self._client, [self.id], "training")

    def stream_validation_metrics(self) -> Iterator[TrialMetrics]:
        """Determined's deprecated `iter_metrics("validation")`, as `ValidationMetrics`."""
        return iter_legacy_metrics(self._client, [self.id], "validation")

    def __repr__(self) -> str:
        return f"Trial(id={self.id})"


_TRIAL_KEYS: dict[TrialSortBy, Callable[[Trial], Any]] = {
    TrialSortBy.ID: lambda t: t.id,
    TrialSortBy.START_TIME: lambda t: t.created_at,
    TrialSortBy.END_TIME: lambda t: t.ended_at,
    TrialSortBy.STATE: lambda t: t.state.value if t.state else None,
    TrialSortBy.BATCHES_PROCESSED: lambda t: t.steps_completed,
    TrialSortBy.RESTARTS: lambda t: t.restarts,
    TrialSortBy.DURATION: lambda t: None if t.ended_at is None or t.created_at is None else t.ended_at - t.created_at,
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
