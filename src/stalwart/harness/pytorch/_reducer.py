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

def _column(values: list[Any]) -> np.ndarray[Any, Any]:
    """One metric over batches as an array (first axis = batch): one device sync for tensors."""
    if all(isinstance(v, torch.Tensor) for v in values):
        stacked = torch.stack([v.detach() for v in values])
        if stacked.is_floating_point():
            stacked = stacked.double()
        return stacked.cpu().numpy()
    return np.asarray([v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v for v in values])


def _local(reducer: Reducer, col: np.ndarray[Any, Any]) -> Any:
    if reducer is Reducer.AVG:
        return col.mean(axis=0)
    if reducer is Reducer.SUM:
        return col.sum(axis=0)
    if reducer is Reducer.MAX:
        return col.max(axis=0)
    return col.min(axis=0)


def _cross(reducer: Reducer, parts: list[tuple[Any, int]]) -> Any:
    parts = [(v, n) for v, n in parts if n > 0]
    values = np.asarray([v for v, _ in parts])
    if reducer is Reducer.AVG:
        return np.average(values, axis=0, weights=[n for _, n in parts])
    return _local(reducer, values)


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
    """Reduce each metric over batches and, with several ranks, across ranks (AVG weighted by batches)."""
    per_key = _per_key_reducers(reducers, cols.keys())
    local = {k: (_local(per_key[k], col), len(col)) for k, col in cols.items()}
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
    """The mean of each metric over one rank's batches (the training report), with one op per metric.

    Scalar tensors, the usual case, are averaged in torch: this runs once per reporting period,
    when numpy's code paths are cold, so it stays in the library that is hot during training.
    """
    if not batch_metrics:
        return {}
    keys = batch_metrics[0].keys()
    out: Metrics = {}
    for k in keys:
        try:
            values = [m[k] for m in batch_metrics]
        except KeyError:
            raise ValueError(f"metric {k!r} is missing from some batches: names must match across batches") from None
        if all(type(v) is torch.Tensor and v.dim() == 0 for v in values):
            out[k] = torch.stack(values).double().mean().item()
        else:
            out[k] = plain(_column(values).mean(axis=0))
    return out


def batch_rows(cols: dict[str, np.ndarray[Any, Any]]) -> list[Metrics]:
    """The per-batch metrics back as a list of dicts of plain values."""
    if not cols:
        return []
    as_lists = {k: col.tolist() for k, col in cols.items()}
    n = len(next(iter(as_lists.values())))
    return [{k: v[i] for k, v in as_lists.items()} for i in range(n)]
