"""`asha_promotion`: promotion-based ASHA, as Determined 0.37's `stop_once: false` ASHA.

Selected by `searcher.name: asha_promotion` (fields as `adaptive_asha`), or by an
`adaptive_asha` / `async_halving` config that sets `stop_once: false` explicitly. Brackets,
rung lengths, trials and concurrency per bracket are planned exactly as for the stop-based
searchers (`stalwart.searcher.asha`); what differs is how a trial moves between rungs:

* A trial is created with `length` = rung 0's length. When it validates at (or past) the length
  of the rung it trains toward, its metric is recorded there and it is paused (`Pause`): it
  checkpoints and waits. At the last rung it is finished (`Stop`).
* Promotion (Li et al.'s asynchronous rule, 0.37's `promotionsAsync`): with `n` results in a rung
  before the new one, `old = floor(n / d)` and `new = floor((n + 1) / d)`. The new trial is
  promoted at once if it lands at a position `< new`; otherwise, if `new > old` and the trial at
  position `old` has not been promoted, that one is. A promoted trial gets `Resume(rid, next
  rung's length)` (after its `Pause`, when it is the trial that just reported).
* Workers: at most `max_concurrent_trials` of the bracket's trials train at once (when it is 0,
  `clamp(d^(R-1), 1, max_trials)`, the initial number of trials). Each freed slot goes first to
  promotions, then to new trials while fewer than `max_trials` valid trials exist.
* Close-out: once every trial is created, a rung with no trial still training toward it or any
  lower rung can get no more results, so its unpromoted trials are stopped (`Stop` on a paused
  trial: the master completes it without running it).
* INVALID_HP: the trial's results leave every rung and it is replaced (not counted). ERRORED /
  CANCELED (and a trial ending on its own before its rung): counted as a worst-value result at the
  rung it trained toward; if such a trial is later promoted it immediately reports the worst
  value again at the next rung.
* Progress as the stop-based searcher (`rung0_count / (1.2 max_trials)`, then at least
  `closed_valid / max_trials`). `Shutdown` when every trial is closed and every running one has
  exited; a failure when every valid trial errored.
* `sampler: tpe`: new trials are asked of the tournament's OptunaModel, which is told every rung
  result; a paused trial stays RUNNING there until it finishes (COMPLETE) or is closed out (PRUNED).
  `sampler: evolution` shares an EvolutionModel the same way (new trials mutate the best-ranked ones).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

from stalwart.searcher._common import WORST, SearchContext, clamp_progress, rung_units
from stalwart.searcher.asha import draw_trial
from stalwart.searcher.base import Action, Create, Pause, Resume, Stop, TrialExit
from stalwart.searcher.space import HParamSpace

RUNNING, PAUSED, CLOSED = "running", "paused", "closed"


def _metric_of(entry: list[Any]) -> float:
    metric: float = entry[0]
    return metric


class PromotionBracket:
    """One promotion-based ASHA bracket."""

    def __init__(self, ctx: SearchContext, space: HParamSpace, *, num_rungs: int, divisor: float,
                 max_trials: int, max_concurrent: int, total: int) -> None:
        self.ctx = ctx
        self.space = space
        self.num_rungs = num_rungs
        self.divisor = divisor
        self.max_trials = max_trials
        self.total = total
        self.units = rung_units(total, divisor, num_rungs)
        if max_concurrent > 0:
            self.capacity = max_concurrent
        else:
            self.capacity = max(1, min(int(divisor ** (num_rungs - 1)), max_trials))
        # rung entries: [metric, rid, promoted]
        self.rungs: list[list[list[Any]]] = [[] for _ in range(num_rungs)]
        self.outstanding = [0] * num_rungs  # trials training toward each rung
        self.trial_rung: dict[str, int] = {}
        self.status: dict[str, str] = {}
        self.exited: set[str] = set()  # no process and none will run again
        self.early_exit: set[str] = set()
        self.invalid = 0
        self.closed_valid = 0
        self.exited_valid = 0
        self.errored = 0
        self.n_running = 0
        self.n_finished = 0  # closed and exited
        self.closed_upto = 0  # rungs below this were closed out
        self.model: Any = None  # the tournament's model with `sampler: tpe` or `evolution`, else random draws

    # -- bookkeeping --------------------------------------------------------------------------

    @property
    def valid_trials(self) -> int:
        return len(self.trial_rung) - self.invalid

    def wants(self, rid: str) -> bool:
        """Whether a validation from `rid` can matter (it is training toward a rung)."""
        return self.status.get(rid) == RUNNING

    def done(self) -> bool:
        return bool(self.trial_rung) and self.n_finished == len(self.trial_rung)

    def _set(self, rid: str, status: str) -> None:
        old = self.status.get(rid)
        if old == status:
            return
        self.n_running += (status == RUNNING) - (old == RUNNING)
        self.status[rid] = status
        if status == CLOSED and rid in self.exited:
            self.n_finished += 1

    def _exit(self, rid: str) -> None:
        if rid not in self.exited:
            self.exited.add(rid)
            if self.status.get(rid) == CLOSED:
                self.n_finished += 1

    def _close(self, rid: str, *, valid: bool = True) -> None:
        if self.status.get(rid) != CLOSED:
            self._set(rid, CLOSED)
            if valid:
                self.closed_valid += 1

    def create(self) -> Create:
        rid, hparams, seed = draw_trial(self.ctx, self.space, self.model)
        self.trial_rung[rid] = 0
        self._set(rid, RUNNING)
        self.outstanding[0] += 1
        return Create(rid, hparams, seed, self.units[0])

    def initial_operations(self) -> list[Action]:
        return [self.create() for _ in range(min(self.capacity, self.max_trials))]

    # -- rung logic ---------------------------------------------------------------------------

    def _insert(self, rung_index: int, metric: float, rid: str) -> int:
        rung = self.rungs[rung_index]
        pos = bisect.bisect_right(rung, metric, key=_metric_of)
        rung.insert(pos, [metric, rid, False])
        self.closed_upto = min(self.closed_upto, rung_index)
        return pos

    def _promotions(self, rung_index: int, rid: str, metric: float) -> list[str]:
        rung = self.rungs[rung_index]
        old = int(len(rung) // self.divisor)
        new = int((len(rung) + 1) // self.divisor)
        pos = self._insert(rung_index, metric, rid)
        if pos < new:
            rung[pos][2] = True
            return [rid]
        if new != old:
            entry = rung[old]
            if not entry[2] and (self.status[entry[1]] != CLOSED or entry[1] in self.early_exit):
                entry[2] = True
                return [entry[1]]
        return []

    def _record(self, rid: str, rung_index: int, metric: float) -> list[Action]:
        """A result for `rid` at `rung_index`: pause or finish it, then promote."""
        actions: list[Action] = []
        self.outstanding[rung_index] -= 1
        alive = rid not in self.early_exit
        if self.model is not None and alive:
            self.model.report(rid, self.units[rung_index], metric)
        if rung_index == self.num_rungs - 1:
            self._insert(rung_index, metric, rid)
            if alive:
                actions.append(Stop(rid))
                if self.model is not None:
                    self.model.finish(rid, "COMPLETE", metric)
            self._close(rid)
            return actions
        if alive:
            actions.append(Pause(rid))
        self._set(rid, PAUSED)
        for pid in self._promotions(rung_index, rid, metric):
            actions += self._promote(pid, rung_index + 1)
        return actions

    def _promote(self, rid: str, rung_index: int) -> list[Action]:
        self.trial_rung[rid] = rung_index
        self.outstanding[rung_index] += 1
        if rid in self.early_exit:
            return self._record(rid, rung_index, WORST)
        self._set(rid, RUNNING)
        return [Resume(rid, self.units[rung_index])]

    def _close_out(self) -> list[Action]:
        actions: list[Action] = []
        if self.valid_trials < self.max_trials:
            return actions
        while self.closed_upto < self.num_rungs and self.outstanding[self.closed_upto] == 0:
            for entry in self.rungs[self.closed_upto]:
                rid = entry[1]
                if entry[2] or self.status[rid] == CLOSED:
                    continue
                if rid not in self.early_exit:
                    actions.append(Stop(rid))
                    self.exited_valid += 1
                if self.model is not None:
                    self.model.finish(rid, "PRUNED")
                self._close(rid)
                self._exit(rid)
            self.closed_upto += 1
        return actions

    def _fill(self) -> list[Action]:
        actions: list[Action] = []
        while self.n_running < self.capacity and self.valid_trials < self.max_trials:
            actions.append(self.create())
        return actions

    def _settle(self, actions: list[Action]) -> list[Action]:
        return actions + self._fill() + self._close_out()

    # -- events -------------------------------------------------------------------------------

    def on_validation(self, rid: str, metric: float, time: float) -> list[Action]:
        if self.status.get(rid) != RUNNING:
            return []
        rung_index = self.trial_rung[rid]
        if time < self.units[rung_index]:
            return []
        return self._settle(self._record(rid, rung_index, metric))

    def on_exit(self, rid: str, how: TrialExit) -> list[Action]:
        status = self.status.get(rid)
        if status is None or rid in self.exited:
            return []
        if status == PAUSED and how in (TrialExit.COMPLETED, TrialExit.USER_REQUESTED_STOP):
            return []  # the run a Pause ended; the master should not report it, but tolerate it
        if self.model is not None:  # a no-op for a trial already told (stopped, finished or closed out)
            self.model.close(rid, invalid=how is TrialExit.INVALID_HP)
        if how is TrialExit.INVALID_HP:
            if status == RUNNING:
                self.outstanding[self.trial_rung[rid]] -= 1
            for rung in self.rungs[: self.trial_rung[rid] + 1]:
                rung[:] = [entry for entry in rung if entry[1] != rid]
            self.invalid += 1
            self._close(rid, valid=False)
            self._exit(rid)
            return self._settle([self.create()])
        self.exited_valid += 1
        if status == CLOSED:
            self._exit(rid)
            return self._settle([])
        if how is TrialExit.ERRORED:
            self.errored += 1
        self.early_exit.add(rid)
        self._exit(rid)
        if status == RUNNING:
            return self._settle(self._record(rid, self.trial_rung[rid], WORST))
        return self._settle([])  # paused and canceled: its result stays, closed unless promoted

    def progress(self) -> float:
        value = len(self.rungs[0]) / (1.2 * self.max_trials)
        if self.valid_trials >= self.max_trials:
            value = max(value, self.closed_valid / self.max_trials)
        return clamp_progress(value)

    # -- state --------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "rungs": self.rungs,
            "outstanding": list(self.outstanding),
            "trials": [[rid, r, self.status[rid]] for rid, r in self.trial_rung.items()],
            "exited": sorted(self.exited, key=int),
            "early_exit": sorted(self.early_exit, key=int),
            "counts": [self.invalid, self.closed_valid, self.exited_valid, self.errored, self.closed_upto],
        }

    def load(self, state: Mapping[str, Any]) -> None:
        self.rungs = [[[float(m), str(r), bool(p)] for m, r, p in rung] for rung in state["rungs"]]
        self.outstanding = [int(x) for x in state["outstanding"]]
        self.trial_rung = {str(rid): int(r) for rid, r, _ in state["trials"]}
        self.status = {str(rid): str(s) for rid, _, s in state["trials"]}
        self.exited = {str(r) for r in state["exited"]}
        self.early_exit = {str(r) for r in state["early_exit"]}
        self.invalid, self.closed_valid, self.exited_valid, self.errored, self.closed_upto = (
            int(x) for x in state["counts"])
        self.n_running = sum(1 for s in self.status.values() if s == RUNNING)
        self.n_finished = sum(1 for rid, s in self.status.items() if s == CLOSED and rid in self.exited)

    def describe(self) -> dict[str, Any]:
        return {"num_rungs": self.num_rungs, "max_trials": self.max_trials,
                "max_concurrent_trials": self.capacity, "rung_lengths": list(self.units)}
