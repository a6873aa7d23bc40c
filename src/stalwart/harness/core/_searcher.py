"""SearcherContext (deprecated in Determined, still used): the length to train to, in the configured unit."""

from __future__ import annotations

import enum
from collections.abc import Iterator

from stalwart.client import Client
from stalwart.harness.core._distributed import DistributedContext


class Unit(enum.Enum):
    EPOCHS = "EPOCHS"
    RECORDS = "RECORDS"
    BATCHES = "BATCHES"


class SearcherMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"


class SearcherOperation:
    def __init__(self, context: SearcherContext, length: int) -> None:
        self._context = context
        self.length = length
        self._completed = False

    def report_progress(self, length: float) -> None:
        if self._context._dist.rank != 0:
            return
        self._context._progress(min(1.0, max(0.0, float(length) / self.length)) if self.length else 1.0)

    def report_completed(self, searcher_metric: float) -> None:
        self._completed = True
        self._context._progress(1.0)


class SearcherContext:
    def __init__(self, client: Client | None, trial_id: int | None, dist: DistributedContext,
                 length: int | None, unit: str | None) -> None:
        self._client = client
        self._trial_id = trial_id
        self._dist = dist
        self._length = length
        self._unit = unit

    def _progress(self, fraction: float) -> None:
        if self._client is not None and self._trial_id is not None:
            self._client.report_progress(self._trial_id, fraction)

    def operations(self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief,
                   auto_ack: bool = True) -> Iterator[SearcherOperation]:
        """Yield the one operation of this trial: train to `length` units (from `searcher.max_length`)."""
        if self._length is None:
            raise RuntimeError(
                "searcher.operations() needs searcher.max_length in the experiment config; "
                "with max_time/time_metric, train for your own length and report progress instead"
            )
        op = SearcherOperation(self, self._length)
        yield op
        if not op._completed and self._dist.rank == 0:
            raise RuntimeError("the searcher operation ended without report_completed(metric)")

    def acknowledge_out_of_ops(self) -> None:
        pass

    def get_configured_units(self) -> Unit | None:
        return Unit[self._unit.upper()] if self._unit else None
