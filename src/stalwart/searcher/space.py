"""The hyperparameter space: random sampling, grid points, and PBT's perturbations.

Leaves are `const`, `int`, `double`, `log` and `categorical`; maps without `type` are nested
groups, to any depth; the trial sees a plain nested dict (an empty group is `{}`). Both the
expanded config (typed leaves) and a raw one (bare scalars/lists are const) are accepted.

Order. Leaves are visited depth first with the keys of every group in sorted order, so the order
does not depend on how the config's keys were stored (JSON columns may reorder them). Random draws
happen in that order, one per non-const leaf:

* `int`: uniform integer in [minval, maxval] (`rng.randint`);
* `double`: `rng.uniform(minval, maxval)`;
* `log`: `base ** rng.uniform(minval, maxval)` (minval/maxval are exponents; base defaults to 10);
* `categorical`: `vals[rng.randrange(len(vals))]`.

Grid (Determined's rules). Axis values per leaf:

* `const`: `[val]`;
* `int`: effective count `c = min(count, maxval - minval + 1)`; `c == 1` gives the rounded
  midpoint, else `round(minval + i * (maxval - minval) / (c - 1))` for i in 0..c-1 (rounding is
  half away from zero, like Go's `math.Round`);
* `double`: `linspace(minval, maxval, count)`; count 1 gives the midpoint;
* `log`: `base ** linspace(minval, maxval, count)`; count 1 gives `base ** midpoint`;
* `categorical`: every value, in the given order.

The grid is the cartesian product of the axes in leaf order, the first leaf varying slowest
(lexicographic). Point `k` is computed from `k` by mixed-radix decoding, so the product is never
materialised.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stalwart.api.errors import ConfigError

_NUMERIC = ("int", "double", "log")


@dataclass(frozen=True)
class Leaf:
    """One hyperparameter: its path in the nested dict and its typed spec."""

    path: tuple[str, ...]
    kind: str
    spec: Mapping[str, Any]

    @property
    def name(self) -> str:
        return ".".join(self.path)

    @property
    def where(self) -> str:
        return "hyperparameters." + self.name

    # Bounds of the value (not of the exponent, for log).
    def low(self) -> float:
        # float ** float is typed Any (a negative base gives a complex); the config checked base > 0
        # and that minval is a number (int or float)
        low: float = self.base ** float(self.spec["minval"]) if self.kind == "log" else self.spec["minval"]
        return low

    def high(self) -> float:
        high: float = self.base ** float(self.spec["maxval"]) if self.kind == "log" else self.spec["maxval"]
        return high

    @property
    def base(self) -> float:
        base = self.spec.get("base")
        return 10.0 if base is None else float(base)


def round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _is_typed(spec: Any) -> bool:
    return isinstance(spec, Mapping) and "type" in spec


class HParamSpace:
    """The leaves and group structure of a `hyperparameters` section."""

    def __init__(self, hparams: Mapping[str, Any] | None) -> None:
        self.leaves: list[Leaf] = []
        self._groups: list[tuple[str, ...]] = []  # every nested group, empty ones included
        self._walk(hparams or {}, ())

    def _walk(self, group: Mapping[str, Any], prefix: tuple[str, ...]) -> None:
        for key in sorted(group, key=str):
            spec = group[key]
            path = prefix + (str(key),)
            if _is_typed(spec):
                kind = spec.get("type")
                if kind not in ("const",) + _NUMERIC + ("categorical",):
                    raise ConfigError(f"hyperparameters.{'.'.join(path)}.type: unknown type {kind!r}",
                                      details=[f"hyperparameters.{'.'.join(path)}.type: unknown type {kind!r}"])
                self.leaves.append(Leaf(path, kind, spec))
                self._check_leaf(self.leaves[-1])
            elif isinstance(spec, Mapping):
                self._groups.append(path)
                self._walk(spec, path)
            else:
                self.leaves.append(Leaf(path, "const", {"type": "const", "val": spec}))

    @staticmethod
    def _check_leaf(leaf: Leaf) -> None:
        spec = leaf.spec
        problems = []
        if leaf.kind in _NUMERIC:
            low, high = spec.get("minval"), spec.get("maxval")
            if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
                problems.append(f"{leaf.where}: minval and maxval are required numbers")
            elif low >= high:
                problems.append(f"{leaf.where}.minval: must be less than maxval (got {low!r} >= {high!r})")
            if leaf.kind == "log" and spec.get("base") is not None and not spec["base"] > 0:
                problems.append(f"{leaf.where}.base: must be > 0")
        if leaf.kind == "categorical" and not spec.get("vals"):
            problems.append(f"{leaf.where}.vals: needs at least one value")
        if problems:
            raise ConfigError(f"invalid hyperparameter {leaf.where}", details=problems)

    # -- building the trial's dict -------------------------------------------------------------

    def build(self, values: Mapping[tuple[str, ...], Any]) -> dict[str, Any]:
        """The nested dict for per-leaf `values` (const leaves are filled in)."""
        out: dict[str, Any] = {}
        for group in self._groups:
            node = out
            for part in group:
                node = node.setdefault(part, {})
        for leaf in self.leaves:
            node = out
            for part in leaf.path[:-1]:
                node = node.setdefault(part, {})
            if leaf.kind == "const":
                node[leaf.path[-1]] = copy.deepcopy(leaf.spec.get("val"))
            else:
                node[leaf.path[-1]] = values[leaf.path]
        return out

    @staticmethod
    def lookup(hparams: Mapping[str, Any], path: tuple[str, ...]) -> Any:
        node: Any = hparams
        for part in path:
            node = node[part]
        return node

    def flatten(self, hparams: Mapping[str, Any]) -> dict[tuple[str, ...], Any]:
        """Per-leaf values of a trial's nested dict (const leaves included)."""
        return {leaf.path: self.lookup(hparams, leaf.path) for leaf in self.leaves}

    @property
    def searchable(self) -> list[Leaf]:
        return [leaf for leaf in self.leaves if leaf.kind != "const"]

    # -- random sampling -----------------------------------------------------------------------

    @staticmethod
    def sample_leaf(leaf: Leaf, rng: random.Random) -> Any:
        spec = leaf.spec
        if leaf.kind == "int":
            return rng.randint(int(spec["minval"]), int(spec["maxval"]))
        if leaf.kind == "double":
            return rng.uniform(float(spec["minval"]), float(spec["maxval"]))
        if leaf.kind == "log":
            return leaf.base ** rng.uniform(float(spec["minval"]), float(spec["maxval"]))
        if leaf.kind == "categorical":
            vals = spec["vals"]
            return copy.deepcopy(vals[rng.randrange(len(vals))])
        return copy.deepcopy(spec.get("val"))

    def sample(self, rng: random.Random) -> dict[str, Any]:
        """One random point (one draw per non-const leaf, in leaf order)."""
        return self.build({leaf.path: self.sample_leaf(leaf, rng) for leaf in self.searchable})

    # -- grid ----------------------------------------------------------------------------------

    @staticmethod
    def grid_axis(leaf: Leaf) -> list[Any]:
        spec = leaf.spec
        if leaf.kind == "const":
            return [spec.get("val")]
        if leaf.kind == "categorical":
            return list(spec["vals"])
        count = spec.get("count")
        if count is None:
            raise ConfigError(
                f"{leaf.where}.count: required for the grid searcher",
                details=[f"{leaf.where}.count: required for the grid searcher"],
            )
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ConfigError(f"{leaf.where}.count: expected an integer >= 1, got {count!r}",
                              details=[f"{leaf.where}.count: expected an integer >= 1, got {count!r}"])
        low, high = spec["minval"], spec["maxval"]
        if leaf.kind == "int":
            count = min(count, int(high) - int(low) + 1)
            if count == 1:
                return [round_half_away((low + high) / 2)]
            return [round_half_away(low + i * (high - low) / (count - 1)) for i in range(count)]
        points = [(low + high) / 2] if count == 1 else [low + i * (high - low) / (count - 1) for i in range(count)]
        points = [float(p) for p in points]
        if leaf.kind == "log":
            return [leaf.base ** p for p in points]
        return points

    def grid_axes(self) -> list[list[Any]]:
        return [self.grid_axis(leaf) for leaf in self.leaves]

    def grid_size(self) -> int:
        size = 1
        for axis in self.grid_axes():
            size *= len(axis)
        return size

    def grid_point(self, index: int, axes: list[list[Any]] | None = None) -> dict[str, Any]:
        """The `index`-th point of the lexicographic product (first leaf slowest)."""
        axes = self.grid_axes() if axes is None else axes
        picks: list[Any] = [None] * len(axes)
        for pos in range(len(axes) - 1, -1, -1):
            index, digit = divmod(index, len(axes[pos]))
            picks[pos] = axes[pos][digit]
        values = {leaf.path: copy.deepcopy(picks[i]) for i, leaf in enumerate(self.leaves)}
        return self.build(values)

    def grid(self) -> list[dict[str, Any]]:
        """Every point, lexicographic (the grid searcher takes them from the end)."""
        axes = self.grid_axes()
        return [self.grid_point(i, axes) for i in range(self.grid_size())]

    # -- mutation: PBT's explore step, and evolution's ---------------------------------------------

    def mutate(self, hparams: Mapping[str, Any], rng: random.Random, resample_probability: float,
               step: Callable[[Leaf, Any], Any]) -> dict[str, Any]:
        """A child of `hparams`: each searchable leaf is redrawn with `resample_probability`; otherwise a
        categorical value is kept and a number becomes `step(leaf, value)`."""
        old = self.flatten(hparams)
        new: dict[tuple[str, ...], Any] = {}
        for leaf in self.searchable:
            if rng.random() < resample_probability:
                new[leaf.path] = self.sample_leaf(leaf, rng)
            elif leaf.kind == "categorical":
                new[leaf.path] = copy.deepcopy(old[leaf.path])
            else:
                new[leaf.path] = step(leaf, old[leaf.path])
        return self.build(new)

    def explore(self, hparams: Mapping[str, Any], rng: random.Random, resample_probability: float,
                perturb_factor: float) -> dict[str, Any]:
        """PBT's explore step; see `stalwart.searcher.pbt` for the rules."""

        def perturb(leaf: Leaf, value: Any) -> Any:
            up = rng.random() < 0.5
            if leaf.kind == "int":
                value = math.ceil(value * (1 + perturb_factor)) if up else math.floor(value * (1 - perturb_factor))
                return int(min(max(value, int(leaf.spec["minval"])), int(leaf.spec["maxval"])))
            value = value * (1 + perturb_factor) if up else value * (1 - perturb_factor)
            return float(min(max(value, leaf.low()), leaf.high()))

        return self.mutate(hparams, rng, resample_probability, perturb)
