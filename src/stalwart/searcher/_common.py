"""Shared pieces of the searchers: the seeded context, reading metrics, rung lengths."""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Mapping
from typing import Any

from stalwart.api.metric_values import number
from stalwart.config import SearcherSettings

# The value recorded for a trial that errored (Determined uses math.MaxFloat64). A finite number so
# that snapshots stay plain JSON (PostgreSQL rejects Infinity).
WORST = sys.float_info.max

SEED_LIMIT = 2**31 - 1


class SearchContext:
    """The one random generator of a search and its request-id counter.

    Request ids are "1", "2", ... in creation order; brackets of a tournament share one context.
    """

    def __init__(self, experiment_seed: int | None) -> None:
        self.rng = random.Random(0 if experiment_seed is None else int(experiment_seed))
        self.next_id = 1

    def new_request_id(self) -> str:
        rid = str(self.next_id)
        self.next_id += 1
        return rid

    def trial_seed(self) -> int:
        """A trial seed in [0, 2^31), as Determined's (uint32 < 2^31)."""
        return self.rng.randint(0, SEED_LIMIT)

    def snapshot(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        return {"rng": [version, list(internal), gauss], "next_id": self.next_id}

    def restore(self, snap: Mapping[str, Any]) -> None:
        version, internal, gauss = snap["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        self.next_id = int(snap["next_id"])


def is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class MetricReader:
    """Reads the searcher metric (sign-flipped so smaller is better) and the time value.

    Only searchers that use the metric's value read it; one that needs it and does not find it ends
    the search (`missing` says why), as Determined's ASHA does. Searchers that ignore validations
    (single, random, grid) never look, so a validation without the metric is simply stored.
    """

    def __init__(self, metric: str, smaller_is_better: bool, time_metric: str | None) -> None:
        self.metric = metric
        self.sign = 1.0 if smaller_is_better else -1.0
        self.time_metric = time_metric

    @classmethod
    def of(cls, settings: SearcherSettings, time_metric: str | None) -> MetricReader:
        return cls(settings.metric, settings.smaller_is_better, time_metric)

    def value(self, metrics: Mapping[str, Any]) -> float | None:
        """The metric, smaller-is-better; None when absent or not a number.

        NaN (also stored as "NaN") is the worst value, as for an errored trial; +-Infinity are +-WORST,
        so that snapshots stay finite JSON.
        """
        raw = number(metrics.get(self.metric))
        if raw is None:
            return None
        if raw != raw:
            return WORST
        return max(-WORST, min(WORST, self.sign * raw))

    def time(self, metrics: Mapping[str, Any], steps_completed: int | None) -> float | None:
        """`metrics[time_metric]`; for `batches`, `steps_completed` when the metric is absent."""
        if self.time_metric is None:
            return None
        raw = metrics.get(self.time_metric)
        if raw is None and self.time_metric == "batches" and steps_completed is not None:
            raw = steps_completed
        return float(raw) if raw is not None and is_finite_number(raw) else None

    def read(self, metrics: Mapping[str, Any], steps_completed: int | None) -> tuple[float, float]:
        """(value, time) of a validation that `missing` accepted, for a reader with a time metric."""
        value, time = self.value(metrics), self.time(metrics, steps_completed)
        if value is None or time is None:
            raise ValueError(self.missing(metrics, steps_completed) or "this searcher has no time metric to read")
        return value, time

    def missing(self, metrics: Mapping[str, Any], steps_completed: int | None) -> str | None:
        """Why a validation can't be used (naming the metric and what was reported), or None."""
        if self.value(metrics) is None:
            kind, name, field = "searcher metric", self.metric, "searcher.metric"
        elif self.time_metric is not None and self.time(metrics, steps_completed) is None:
            kind, name, field = "time metric", self.time_metric, "the searcher's time_metric"
        else:
            return None
        reported = ", ".join(sorted(metrics)) or "none"
        return (f"{kind} '{name}' is missing from the validation metrics reported at "
                f"steps_completed={steps_completed} (reported: {reported}); report it or change {field}")


def rung_units(total: int, divisor: float, num_rungs: int) -> list[int]:
    """`units_i = max(floor(T / d^(R-1-i)), 1)`; exact integer arithmetic when d is integral."""
    out = []
    for i in range(num_rungs):
        power = num_rungs - 1 - i
        units = total // int(divisor) ** power if float(divisor).is_integer() else math.floor(total / divisor ** power)
        out.append(max(int(units), 1))
    return out


def floor_log(value: int, base: float) -> int:
    """floor(log_base(value)) for value >= 1, exact for integral bases (no floating-point drift)."""
    if value < 1:
        return 0
    if float(base).is_integer():
        b, k, acc = int(base), 0, int(base)
        while acc <= value:
            k += 1
            acc *= b
        return k
    k = math.floor(math.log(value) / math.log(base) + 1e-12)
    return max(k, 0)


def clamp_progress(value: float) -> float:
    return max(0.0, min(1.0, float(value)))
