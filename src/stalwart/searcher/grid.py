"""The `grid` searcher (Determined 0.38 semantics).

* The points are the cartesian product of every leaf's grid axis, nested leaves included (axis
  rules and the lexicographic order are in `stalwart.searcher.space`). Total trials = the product
  of the axis sizes; an `int` axis is clipped to the number of integers in its range.
* Points are taken from the END of the lexicographic list (Determined pops them), so the first
  trial gets the last point and trials come in reverse lexicographic order.
* Starts `min(N, max_concurrent_trials)` trials (all with 0), then one new trial per exit.
* No retry on INVALID_HP: the point is simply used up.
* Shutdown when all N trials have exited; progress as `random` with N in place of max_trials.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.searcher._common import SearchContext
from stalwart.searcher.random_search import PoolSearch
from stalwart.searcher.space import HParamSpace


class GridSearch(PoolSearch):
    replace_invalid = False

    def __init__(self, space: HParamSpace, experiment_seed: int | None, max_concurrent: int,
                 length: int | None) -> None:
        self.space = space
        self._axes = space.grid_axes()
        self.size = 1
        for axis in self._axes:
            self.size *= len(axis)
        super().__init__(SearchContext(experiment_seed), self.size, max_concurrent, length)
        self.taken = 0

    def next_hparams(self) -> dict[str, Any]:
        point = self.space.grid_point(self.size - 1 - self.taken, self._axes)
        self.taken += 1
        return point

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), "taken": self.taken}

    def _load(self, state: Mapping[str, Any]) -> None:
        super()._load(state)
        self.taken = int(state["taken"])
