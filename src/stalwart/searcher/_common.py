"""Shared pieces of the searchers: the seeded context, reading metrics, config fields, lengths."""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.api.metric_values import number
from stalwart.config import views

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

    def snapshot(self) -> dict:
        version, internal, gauss = self.rng.getstate()
        return {"rng": [version, list(internal), gauss], "next_id": self.next_id}

    def restore(self, snap: Mapping) -> None:
        version, internal, gauss = snap["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        self.next_id = int(snap["next_id"])


def searcher_section(config: Mapping) -> Mapping:
    value = config.get("searcher")
    return value if isinstance(value, Mapping) else {}


def field(searcher: Mapping, key: str, default: Any = None) -> Any:
    value = searcher.get(key)
    return default if value is None else value


def int_field(searcher: Mapping, key: str, default: int | None = None, *, minimum: int | None = None,
              required: bool = False) -> int | None:
    """Read an int field (the config package validates; this is the searcher's own guard)."""
    value = searcher.get(key)
    if value is None:
        if required:
            raise ConfigError(f"searcher.{key}: required", details=[f"searcher.{key}: required"])
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"searcher.{key}: expected an integer, got {value!r}",
                          details=[f"searcher.{key}: expected an integer, got {value!r}"])
    if minimum is not None and value < minimum:
        raise ConfigError(f"searcher.{key}: expected an integer >= {minimum}, got {value}",
                          details=[f"searcher.{key}: expected an integer >= {minimum}, got {value}"])
    return value


def float_field(searcher: Mapping, key: str, default: float, *, minimum: float | None = None,
                maximum: float | None = None, exclusive_min: float | None = None) -> float:
    value = searcher.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"searcher.{key}: expected a number, got {value!r}",
                          details=[f"searcher.{key}: expected a number, got {value!r}"])
    bad = ((minimum is not None and value < minimum) or (maximum is not None and value > maximum)
           or (exclusive_min is not None and value <= exclusive_min))
    if bad:
        lo = f"> {exclusive_min}" if exclusive_min is not None else f">= {minimum}"
        hi = f" and <= {maximum}" if maximum is not None else ""
        raise ConfigError(f"searcher.{key}: expected a number {lo}{hi}, got {value}",
                          details=[f"searcher.{key}: expected a number {lo}{hi}, got {value}"])
    return float(value)


def budget(config: Mapping) -> tuple[int | None, str | None]:
    """`(T, time_metric)`: max_time in units of time_metric, else the legacy max_length and its unit."""
    mt = views.max_time(config)
    if mt is not None:
        return mt
    length = views.max_length(config)
    if length is not None:
        return length.value, length.unit
    return None, None


def required_budget(config: Mapping, name: str) -> tuple[int, str]:
    total, metric = budget(config)
    if total is None or metric is None:
        raise ConfigError(
            f"searcher: {name} needs time_metric and max_time (or the legacy max_length)",
            details=[f"searcher: {name} needs time_metric and max_time (or the legacy max_length)"],
        )
    if total < 1:
        raise ConfigError(f"searcher: {name} needs a length of at least 1, got {total}",
                          details=[f"searcher.max_time: expected an integer >= 1, got {total}"])
    return int(total), metric


def is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class MetricReader:
    """Reads the searcher metric (sign-flipped so smaller is better) and the time value."""

    def __init__(self, metric: str | None, smaller_is_better: bool, time_metric: str | None) -> None:
        self.metric = metric
        self.sign = 1.0 if smaller_is_better else -1.0
        self.time_metric = time_metric

    @classmethod
    def from_config(cls, config: Mapping, time_metric: str | None) -> "MetricReader":
        return cls(views.searcher_metric(config), views.smaller_is_better(config), time_metric)

    def value(self, metrics: Mapping) -> float | None:
        """The metric, smaller-is-better; None when absent or not a number.

        NaN (also stored as "NaN") is the worst value, as for an errored trial; +-Infinity are +-WORST,
        so that snapshots stay finite JSON.
        """
        raw = number(metrics.get(self.metric)) if self.metric else None
        if raw is None:
            return None
        if raw != raw:
            return WORST
        return max(-WORST, min(WORST, self.sign * raw))

    def time(self, metrics: Mapping, steps_completed: int | None) -> float | None:
        """`metrics[time_metric]`; for `batches`, `steps_completed` when the metric is absent."""
        if self.time_metric is None:
            return None
        raw = metrics.get(self.time_metric)
        if raw is None and self.time_metric == "batches" and steps_completed is not None:
            raw = steps_completed
        return float(raw) if is_finite_number(raw) else None

    def missing(self, metrics: Mapping, steps_completed: int | None) -> str | None:
        """Why a validation can't be used, or None."""
        if self.value(metrics) is None:
            return f"the validation metrics have no numeric '{self.metric}' (searcher.metric)"
        if self.time_metric is not None and self.time(metrics, steps_completed) is None:
            return f"the validation metrics have no numeric '{self.time_metric}' (the time metric)"
        return None


def rung_units(total: int, divisor: float, num_rungs: int) -> list[int]:
    """`units_i = max(floor(T / d^(R-1-i)), 1)`; exact integer arithmetic when d is integral."""
    out = []
    for i in range(num_rungs):
        power = num_rungs - 1 - i
        if float(divisor).is_integer():
            units = total // (int(divisor) ** power)
        else:
            units = math.floor(total / (divisor ** power))
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
