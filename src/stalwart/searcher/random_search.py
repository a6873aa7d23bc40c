"""The `random` searcher (Determined 0.38 semantics), and the trial pool shared with `grid`.

* Starts `min(max_trials, max_concurrent_trials)` trials (all of them when
  `max_concurrent_trials` is 0).
* Every trial exit creates new trials, one per free slot, while fewer than `max_trials` valid
  trials were created. At most `max_concurrent_trials` trials are alive at once.
* A trial that exits with INVALID_HP does not count toward `max_trials`: it is replaced by a
  new sample.
* Validations are ignored (every trial trains to its own length, `Create.length` = `max_length`).
* When every trial has exited and no more can be created, `Shutdown`: a failure when every trial
  that ran errored.
* Progress: the sum of the trials' progress (exited trials count 1.0, INVALID_HP ones 0) over
  `max_trials`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.searcher._common import SearchContext, clamp_progress
from stalwart.searcher.base import Action, Create, SearchMethod, TrialExit
from stalwart.searcher.space import HParamSpace


class PoolSearch(SearchMethod):
    """Trials drawn from a point source, kept at most `max_concurrent` alive, up to `max_trials`."""

    replace_invalid = True

    def __init__(self, ctx: SearchContext, max_trials: int, max_concurrent: int, length: int | None) -> None:
        self.ctx = ctx
        self.max_trials = max_trials
        self.max_concurrent = max_concurrent
        self.length = length
        self.started = False
        self.created = 0  # valid trials created (INVALID_HP ones are taken back)
        self.live: list[str] = []
        self.closed = 0  # valid trials that exited
        self.errored = 0
        self.shutdown = False

    # Subclasses give the points.
    def next_hparams(self) -> dict[str, Any]:
        raise NotImplementedError

    def _create(self) -> Create:
        hparams = self.next_hparams()
        seed = self.ctx.trial_seed()
        rid = self.ctx.new_request_id()
        self.created += 1
        self.live.append(rid)
        return Create(rid, hparams, seed, self.length)

    def _fill(self) -> list[Action]:
        actions: list[Action] = []
        while self.created < self.max_trials and (self.max_concurrent <= 0 or len(self.live) < self.max_concurrent):
            actions.append(self._create())
        return actions

    def initial_operations(self) -> list[Action]:
        if self.started:
            return []
        self.started = True
        return self._fill()

    def on_validation_completed(self, request_id: str, metrics: dict[str, Any], steps_completed: int) -> list[Action]:
        return []

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        if request_id not in self.live:
            return []
        self.live.remove(request_id)
        if how is TrialExit.INVALID_HP and self.replace_invalid:
            self.created -= 1
        else:
            self.closed += 1
            if how is TrialExit.ERRORED:
                self.errored += 1
        actions = self._fill()
        if not self.live and not self.shutdown:
            self.shutdown = True
            actions.append(self.end_of_search(self.closed, self.errored))
        return actions

    def progress(self, trial_progress: dict[str, float]) -> float:
        if self.shutdown:
            return 1.0
        running = sum(clamp_progress(trial_progress.get(rid, 0.0)) for rid in self.live)
        return clamp_progress((self.closed + running) / max(self.max_trials, 1))

    def _state(self) -> dict[str, Any]:
        return {
            "started": self.started, "created": self.created, "live": list(self.live),
            "closed": self.closed, "errored": self.errored, "shutdown": self.shutdown,
        }

    def _load(self, state: Mapping[str, Any]) -> None:
        self.started = bool(state["started"])
        self.created = int(state["created"])
        self.live = [str(r) for r in state["live"]]
        self.closed = int(state["closed"])
        self.errored = int(state["errored"])
        self.shutdown = bool(state["shutdown"])

    def snapshot(self) -> dict[str, Any]:
        return {"kind": type(self).__name__, "ctx": self.ctx.snapshot(), "state": self._state()}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.ctx.restore(snapshot["ctx"])
        self._load(snapshot["state"])


class RandomSearch(PoolSearch):
    """Random search over the hyperparameter space."""

    def __init__(self, space: HParamSpace, experiment_seed: int | None, max_trials: int,
                 max_concurrent: int, length: int | None) -> None:
        super().__init__(SearchContext(experiment_seed), max_trials, max_concurrent, length)
        self.space = space

    def next_hparams(self) -> dict[str, Any]:
        return self.space.sample(self.ctx.rng)
