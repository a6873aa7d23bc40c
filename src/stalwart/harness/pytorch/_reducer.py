"""Metric reducers: Reducer (AVG/SUM/MAX/MIN) for per-batch metrics, MetricReducer for custom ones, across ranks."""

from __future__ import annotations

import abc
import enum
import itertools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

# A metric value (a tensor, an array, a number...) and the metrics of a batch or a period, by name.
Metrics = dict[str, Any]
# The DistributedContext's allgather: every rank's value, in rank order.
AllGather = Callable[[Any], list[Any]]


class Reducer(enum.Enum):
    """How per-batch evaluation metrics are combined into one value."""

    AVG = 1
    SUM = 2
    MAX = 3
    MIN = 4


class MetricReducer(abc.ABC):
    """A custom metric: gathered by the user, reduced per slot, then across slots."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget the values of the last training or validation period (called before each)."""

    @abc.abstractmethod
    def per_slot_reduce(self) -> Any:
        """This slot's picklable partial result (of any type the reducer chooses)."""

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        """The final metric (or a dict of metrics when wrapped without a name) from every slot's partial."""


class _SimpleReducer(MetricReducer):
    """wrap_reducer(fn): buffers every update() value, then calls fn on the flat list."""

    _MISSING = object()

    def __init__(self, fn: Callable[[list[Any]], Any]) -> None:
        self.fn = fn
        self.values: list[Any] = []

    def reset(self) -> None:
        self.values = []

    def update(self, value: Any) -> None:
        self.values.append(value)

    def per_slot_reduce(self) -> Any:
        return self.values

    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        # Interleave the slots' lists to undo the round-robin sharding of batches.
        flat = [v for row in itertools.zip_longest(*per_slot_metrics, fillvalue=self._MISSING)
                for v in row if v is not self._MISSING]
        return self.fn(flat)


class _Wrapped:
    def __init__(self, reducer: MetricReducer, name: str | None, for_training: bool, for_validation: bool) -> None:
        self.reducer, self.name = reducer, name
        self.for_training, self.for_validation = for_training, for_validation

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as err:
            raise ValueError(f"reducer {type(self.reducer).__name__} (name={self.name!r}) failed in {what}()") from err

    def reduce(self, allgather: AllGather) -> Metrics:
        partial = self._call("per_slot_reduce", self.reducer.per_slot_reduce)
        value = self._call("cross_slot_reduce", self.reducer.cross_slot_reduce, allgather(partial))
        if self.name is None:
            if not isinstance(value, dict):
                raise ValueError(f"reducer {type(self.reducer).__name__} was wrapped without a name, so "
                                 f"cross_slot_reduce() must return a dict of metrics, got {type(value).__name__}")
            return value
        if isinstance(value, dict):
            raise ValueError(f"reducer {self.name!r} has a name, so cross_slot_reduce() must return one value, "
                             "not a dict")
        return {self.name: value}


class ReducerRegistry:
    """The reducers a trial registered with `context.wrap_reducer`."""

    def __init__(self, allgather: AllGather) -> None:
        self._allgather = allgather
        self._wrapped: list[_Wrapped] = []

    def wrap_reducer(self, reducer: Callable[[list[Any]], Any] | MetricReducer, name: str | None = None,
                     for_training: bool = True,
                     for_validation: bool = True) -> MetricReducer:
        if not isinstance(reducer, MetricReducer):
            if not callable(reducer):
                raise TypeError("wrap_reducer() takes a MetricReducer or a function of a list of values")
            reducer = _SimpleReducer(reducer)
        if name is not None and any(w.name == name for w in self._wrapped):
            raise ValueError(f"a reducer named {name!r} is already wrapped")
        self._wrapped.append(_Wrapped(reducer, name, for_training, for_validation))
        reducer.reset()
        return reducer

    def reset_reducers(self) -> None:
        for w in self._wrapped:
            w._call("reset", w.reducer.reset)

    def reduce_metrics(self, for_training: bool) -> Metrics:
        out: Metrics = {}
        for w in self._wrapped:
            if w.for_training if for_training else w.for_validation:
                out.update(w.reduce(self._allgather))
        return out

    def __bool__(self) -> bool:
        return bool(self._wrapped)


# -- per-batch metrics ----------------------------------------------------------------------------
# As Determined 0.38.1 (pytorch/_reducer.py `_simple_reduce_metrics`, pytorch/_metric_utils.py `_reduce_metrics`):
# a metric's values of one rank are stacked (tensors as numpy arrays of their own dtype) and reduced over all
# their elements, so every Reducer yields one number, whatever the shape of the per-batch values; across ranks
# the per-rank numbers are reduced again, AVG weighted by each rank's number of batches.

def _column(values: list[Any]) -> np.ndarray[Any, Any]:
    """One metric over batches as an array (first axis = batch): one device sync for tensors."""
    if all(isinstance(v, torch.Tensor) for v in values):
        return torch.stack([v.detach() for v in values]).cpu().numpy()
    return np.stack([v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v for v in values])


def _reduce(reducer: Reducer, values: Any, weights: list[int] | None = None) -> Any:
    """One number from all the elements of `values` (AVG weighted by `weights`, one per first-axis entry)."""
    if reducer is Reducer.AVG:
        return np.average(values, weights=weights)
    if reducer is Reducer.SUM:
        return np.sum(values)
    if reducer is Reducer.MAX:
        return np.max(values)
    return np.min(values)


def _cross(reducer: Reducer, parts: list[tuple[Any, int]]) -> Any:
    """The per-rank results (value, batches) reduced into one; ranks without batches are left out."""
    parts = [(v, n) for v, n in parts if n > 0]
    weights = [n for _, n in parts] if reducer is Reducer.AVG else None
    return _reduce(reducer, [v for v, _ in parts], weights)


def plain(value: Any) -> Any:
    """numpy / torch values as Python floats, ints and lists."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def columns(batch_metrics: list[Metrics]) -> dict[str, np.ndarray[Any, Any]]:
    """Per-batch metric dicts as one array per metric name (names must match across batches)."""
    if not batch_metrics:
        return {}
    keys = batch_metrics[0].keys()
    for m in batch_metrics:
        if m.keys() != keys:
            raise ValueError(f"metric names must match across batches: {sorted(keys)} != {sorted(m.keys())}")
    return {k: _column([m[k] for m in batch_metrics]) for k in keys}


def reduce_columns(cols: dict[str, np.ndarray[Any, Any]], reducers: Reducer | dict[str, Reducer],
                   allgather: AllGather | None = None, world_size: int = 1) -> Metrics:
    """Reduce each metric to one number over batches and, with several ranks, across ranks (AVG weighted by
    batches)."""
    per_key = _per_key_reducers(reducers, cols.keys())
    local = {k: (_reduce(per_key[k], col), len(col)) for k, col in cols.items()}
    if world_size > 1 and allgather is not None:
        gathered = allgather(local)
        names = sorted({k for part in gathered for k in part})
        return {k: plain(_cross(per_key.get(k, Reducer.AVG), [part[k] for part in gathered if k in part]))
                for k in names}
    return {k: plain(v) for k, (v, _) in local.items()}


def _per_key_reducers(reducers: Reducer | dict[str, Reducer], keys: Iterable[str]) -> dict[str, Reducer]:
    if isinstance(reducers, Reducer):
        return {k: reducers for k in keys}
    if not isinstance(reducers, dict):
        raise TypeError("evaluation_reducer() must return a Reducer or a dict of metric name to Reducer")
    missing = [k for k in keys if k not in reducers]
    if missing:
        raise ValueError(f"evaluation_reducer() has no Reducer for metric(s) {missing}")
    return {k: Reducer(v) for k, v in reducers.items()}


def average_batches(batch_metrics: list[Metrics]) -> Metrics:
    """The mean of each metric over one rank's batches (the training report), as Determined's make_metrics.

    Determined 0.38.1 (harness/determined/util.py `make_metrics`) averages all the elements of a metric's
    values, leaving out None, into one Python number, and reports None for values that cannot be averaged
    (strings, arrays of different shapes...).
    """
    return {k: _mean_of_elements(values) for k, values in _by_name(batch_metrics).items()}


def _by_name(batch_metrics: list[Metrics]) -> dict[str, list[Any]]:
    """Each metric's values over the batches (the first batch's names must be in every batch)."""
    if not batch_metrics:
        return {}
    try:
        return {k: [m[k] for m in batch_metrics] for k in batch_metrics[0]}
    except KeyError as missing:
        raise ValueError(f"metric {missing.args[0]!r} is missing from some batches: names must match across "
                         "batches") from None


def average_batches_across_ranks(batch_metrics: list[Metrics], allgather: AllGather) -> Metrics:
    """The training report of several ranks: each rank's average_batches(), averaged over the ranks by batches.

    Determined averages each batch's values over the ranks, then the batches (pytorch/_metric_utils.py
    `_average_training_metrics`, then make_metrics); with every rank training as many batches, that is this mean.
    Batches whose value is None are left out: a metric that is None in every batch is NaN (the mean of nothing,
    as Determined's), one whose values cannot be averaged is None.
    """
    local = {k: _mean_and_count(values) for k, values in _by_name(batch_metrics).items()}
    gathered = allgather(local)
    return {k: _weighted_mean([part[k] for part in gathered if k in part])
            for k in dict.fromkeys(k for part in gathered for k in part)}


def _weighted_mean(parts: list[tuple[Any, int]]) -> Any:
    """The ranks' (mean, batches with a value) as one mean weighted by batches."""
    parts = [(v, n) for v, n in parts if n > 0]
    if not parts:
        return float("nan")
    if any(v is None for v, _ in parts):
        return None
    return np.average([v for v, _ in parts], weights=[n for _, n in parts]).item()


def _mean_and_count(values: list[Any]) -> tuple[Any, int]:
    """This rank's mean of a metric and how many batches gave it a value (not None)."""
    present = [v for v in values if v is not None]
    return (_mean_of_elements(present) if present else None), len(present)


def _mean_of_elements(values: list[Any]) -> Any:
    """The mean of every element of every value (None left out) as a Python number, or None if not numbers."""
    try:
        if all(type(v) is torch.Tensor for v in values):
            array = torch.stack([v.detach() for v in values]).cpu().numpy()  # one device sync
        else:
            array = np.array([v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v for v in values])
        return np.mean(array[array != None]).item()  # noqa: E711 (elementwise, as numpy compares)
    except (TypeError, ValueError, RuntimeError):
        return None


def batch_rows(cols: dict[str, np.ndarray[Any, Any]]) -> list[Metrics]:
    """The per-batch metrics back as a list of dicts of plain values."""
    if not cols:
        return []
    as_lists = {k: col.tolist() for k, col in cols.items()}
    n = len(next(iter(as_lists.values())))
    return [{k: v[i] for k, v in as_lists.items()} for i in range(n)]
