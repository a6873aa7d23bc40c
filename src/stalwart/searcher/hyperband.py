"""`hyperband`: Li et al.'s Hyperband, brackets of synchronous successive halving.

Fields: `metric`, `smaller_is_better`, `max_time` + `time_metric` (or the legacy `max_length`),
`divisor` (eta, default 3), `max_rungs` (default 5), `max_trials` (optional), and
`max_concurrent_trials` (default 16, 0 = unlimited).

Brackets. `s_max = min(floor(log_eta T), max_rungs - 1)`. For `s = s_max .. 0` (that order: the
most aggressive bracket first) the bracket has `s + 1` rungs with lengths
`units_i = max(floor(T / eta^(s-i)), 1)` (the last is `T`) and starts
`n_s = ceil((s_max + 1) / (s + 1) * eta^s)` trials (Li et al., one Hyperband iteration). When
`max_trials` is given, the `n_s` are scaled to it: `max(floor(n_s / sum(n) * max_trials), 1)`,
the remainder going to the first bracket.

Successive halving inside a bracket is synchronous: every trial of a rung trains to the rung's
length and is paused (`Pause`); when the whole rung has reported, the best
`max(floor(m / eta), 1)` of its `m` trials are resumed to the next rung (`Resume`) and the others
stopped (`Stop` on a paused trial). At the last rung trials are stopped as they report.

Workers. Jobs (new trials and resumes) wait in each bracket's queue; whenever fewer than
`max_concurrent_trials` trials are training, the next job of the first bracket that has one is
started, so brackets overlap and workers stay busy.

Exits. INVALID_HP: the trial leaves its rung and a new trial takes its place (not counted).
ERRORED / CANCELED, or a trial that ends on its own before its rung, count as a worst-value result;
such a trial that still makes the cut reports the worst value again at the next rung at once.

Progress: the training units of recorded results over the units the plan needs. `Shutdown` when
every bracket has finished and every trial has exited; a failure when every trial errored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from stalwart.searcher._common import WORST, MetricReader, SearchContext, clamp_progress, floor_log, rung_units
from stalwart.searcher.base import Action, Create, Pause, Resume, SearchMethod, Shutdown, Stop, TrialExit
from stalwart.searcher.space import HParamSpace

RUNNING, PAUSED, CLOSED = "running", "paused", "closed"


def hyperband_plan(total: int, divisor: float, max_rungs: int, max_trials: int | None) -> list[tuple[int, int]]:
    """`[(num_rungs, n_trials)]` per bracket, most rungs first."""
    s_max = max(0, min(floor_log(total, divisor), max_rungs - 1))
    plan = []
    for s in range(s_max, -1, -1):
        n = math.ceil((s_max + 1) / (s + 1) * divisor ** s - 1e-9)
        plan.append((s + 1, max(int(n), 1)))
    if max_trials is not None:
        total_n = sum(n for _, n in plan)
        scaled = [max(int(n / total_n * max_trials), 1) for _, n in plan]
        scaled[0] += max(max_trials - sum(scaled), 0)
        plan = [(r, n) for (r, _), n in zip(plan, scaled, strict=True)]
    return plan


class _Bracket:
    def __init__(self, num_rungs: int, n_trials: int, divisor: float, total: int) -> None:
        self.num_rungs = num_rungs
        self.n_trials = n_trials
        self.divisor = divisor
        self.units = rung_units(total, divisor, num_rungs)
        self.rung = 0
        self.members: list[str] = []
        self.results: dict[str, float] = {}
        self.to_create = n_trials
        self.resumes: list[str] = []  # queued resume jobs
        self.finished = False
        # the plan, for progress: trials expected at each rung
        counts = [n_trials]
        for _ in range(num_rungs - 1):
            counts.append(max(int(counts[-1] // divisor), 1))
        # rung_units gives one length per rung, as many as `counts`
        planned = enumerate(zip(counts, self.units, strict=True))
        self.planned = sum(c * (u - (self.units[i - 1] if i else 0)) for i, (c, u) in planned)
        self.done_units = 0

    def has_job(self) -> bool:
        return self.to_create > 0 or bool(self.resumes)

    def rung_complete(self) -> bool:
        return self.to_create == 0 and not self.resumes and all(m in self.results for m in self.members)

    def increment(self, rung: int) -> int:
        return self.units[rung] - (self.units[rung - 1] if rung else 0)

    def state(self) -> dict[str, Any]:
        return {"rung": self.rung, "members": self.members, "results": [[r, v] for r, v in self.results.items()],
                "to_create": self.to_create, "resumes": self.resumes, "finished": self.finished,
                "done_units": self.done_units}

    def load(self, state: Mapping[str, Any]) -> None:
        self.rung = int(state["rung"])
        self.members = [str(r) for r in state["members"]]
        self.results = {str(r): float(v) for r, v in state["results"]}
        self.to_create = int(state["to_create"])
        self.resumes = [str(r) for r in state["resumes"]]
        self.finished = bool(state["finished"])
        self.done_units = int(state["done_units"])


class HyperbandSearch(SearchMethod):
    def __init__(self, space: HParamSpace, experiment_seed: int | None, reader: MetricReader, *, total: int,
                 divisor: float = 3.0, max_rungs: int = 5, max_trials: int | None = None,
                 max_concurrent: int = 16) -> None:
        self.ctx = SearchContext(experiment_seed)
        self.space = space
        self.reader = reader
        self.total = total
        self.divisor = divisor
        self.max_concurrent = max_concurrent
        plan = hyperband_plan(total, divisor, max_rungs, max_trials)
        self.brackets = [_Bracket(r, n, divisor, total) for r, n in plan]
        self.owner: dict[str, int] = {}
        self.status: dict[str, str] = {}
        self.exited: set[str] = set()
        self.early_exit: set[str] = set()
        self.n_running = 0
        self.errored = 0
        self.exited_valid = 0
        self.started = False
        self.shutdown = False

    # -- bookkeeping --------------------------------------------------------------------------

    def _set(self, rid: str, status: str) -> None:
        old = self.status.get(rid)
        self.n_running += (status == RUNNING) - (old == RUNNING)
        self.status[rid] = status

    def _dispatch(self) -> list[Action]:
        actions: list[Action] = []
        while self.max_concurrent <= 0 or self.n_running < self.max_concurrent:
            bracket_index = next((i for i, b in enumerate(self.brackets) if b.has_job()), None)
            if bracket_index is None:
                break
            bracket = self.brackets[bracket_index]
            if bracket.resumes:
                rid = bracket.resumes.pop(0)
                self._set(rid, RUNNING)
                actions.append(Resume(rid, bracket.units[bracket.rung]))
                continue
            bracket.to_create -= 1
            hparams = self.space.sample(self.ctx.rng)
            seed = self.ctx.trial_seed()
            rid = self.ctx.new_request_id()
            self.owner[rid] = bracket_index
            bracket.members.append(rid)
            self._set(rid, RUNNING)
            actions.append(Create(rid, hparams, seed, bracket.units[0]))
        return actions

    def _result(self, bracket: _Bracket, rid: str, metric: float) -> list[Action]:
        """Record a result at the bracket's current rung; advance the rung when it is complete."""
        bracket.results[rid] = metric
        bracket.done_units += bracket.increment(bracket.rung)
        actions: list[Action] = []
        alive = rid not in self.early_exit
        last = bracket.rung == bracket.num_rungs - 1
        if last:
            if alive:
                actions.append(Stop(rid))
            self._set(rid, CLOSED)
        else:
            if alive:
                actions.append(Pause(rid))
            self._set(rid, PAUSED)
        while not bracket.finished and bracket.rung_complete():
            actions += self._advance(bracket)
        return actions

    def _advance(self, bracket: _Bracket) -> list[Action]:
        actions: list[Action] = []
        if bracket.rung == bracket.num_rungs - 1:
            bracket.finished = True
            return actions
        order = {rid: i for i, rid in enumerate(bracket.members)}
        ranked = sorted(bracket.members, key=lambda r: (bracket.results[r], order[r]))
        keep = max(int(len(ranked) // bracket.divisor), 1)
        survivors, losers = ranked[:keep], ranked[keep:]
        for rid in losers:
            if self.status[rid] == PAUSED and rid not in self.early_exit:
                actions.append(Stop(rid))
                self.exited.add(rid)
                self.exited_valid += 1
            self._set(rid, CLOSED)
        bracket.rung += 1
        bracket.members = survivors
        bracket.results = {}
        for rid in survivors:
            if rid in self.early_exit:
                bracket.results[rid] = WORST
                bracket.done_units += bracket.increment(bracket.rung)
                if bracket.rung == bracket.num_rungs - 1:
                    self._set(rid, CLOSED)
            else:
                bracket.resumes.append(rid)
        return actions

    def _finish(self, actions: list[Action]) -> list[Action]:
        actions += self._dispatch()
        if (not self.shutdown and self.started and all(b.finished for b in self.brackets)
                and all(rid in self.exited for rid in self.owner)):
            self.shutdown = True
            actions.append(self.end_of_search(self.exited_valid, self.errored))
        return actions

    # -- events -------------------------------------------------------------------------------

    def initial_operations(self) -> list[Action]:
        if self.started:
            return []
        self.started = True
        return self._finish([])

    def on_validation_completed(self, request_id: str, metrics: dict[str, Any], steps_completed: int) -> list[Action]:
        if self.status.get(request_id) != RUNNING or self.shutdown:
            return []
        bracket = self.brackets[self.owner[request_id]]
        problem = self.reader.missing(metrics, steps_completed)
        if problem is not None:
            self.shutdown = True
            return [Shutdown(failure=True, reason=f"trial {request_id}: {problem}")]
        value, time = self.reader.read(metrics, steps_completed)
        if time < bracket.units[bracket.rung]:
            return []
        return self._finish(self._result(bracket, request_id, value))

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        status = self.status.get(request_id)
        if status is None or request_id in self.exited:
            return []
        if status == PAUSED and how in (TrialExit.COMPLETED, TrialExit.USER_REQUESTED_STOP):
            return []  # the run a Pause ended (not reported by the master; tolerated)
        self.exited.add(request_id)
        bracket = self.brackets[self.owner[request_id]]
        if how is TrialExit.INVALID_HP and status == RUNNING and bracket.rung == 0:
            bracket.members.remove(request_id)
            bracket.to_create += 1
            self._set(request_id, CLOSED)
            return self._finish([])
        self.exited_valid += 1
        if status == CLOSED:
            return self._finish([])
        if how is TrialExit.ERRORED:
            self.errored += 1
        self.early_exit.add(request_id)
        if status == RUNNING:
            return self._finish(self._result(bracket, request_id, WORST))
        return self._finish([])

    def progress(self, trial_progress: dict[str, float]) -> float:
        if self.shutdown:
            return 1.0
        planned = sum(b.planned for b in self.brackets)
        return clamp_progress(sum(b.done_units for b in self.brackets) / max(planned, 1))

    def milestones(self) -> list[int]:
        return sorted({u for b in self.brackets for u in b.units})

    def describe(self) -> list[dict[str, Any]]:
        out = []
        for b in self.brackets:
            counts = [b.n_trials]
            for _ in range(b.num_rungs - 1):
                counts.append(max(int(counts[-1] // b.divisor), 1))
            out.append({"num_rungs": b.num_rungs, "max_trials": b.n_trials, "rung_lengths": list(b.units),
                        "rung_trials": counts})
        return out

    # -- state --------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "kind": "HyperbandSearch",
            "ctx": self.ctx.snapshot(),
            "trials": [[rid, i, self.status[rid]] for rid, i in self.owner.items()],
            "exited": sorted(self.exited, key=int),
            "early_exit": sorted(self.early_exit, key=int),
            "counts": [self.errored, self.exited_valid],
            "started": self.started,
            "shutdown": self.shutdown,
            "brackets": [b.state() for b in self.brackets],
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.ctx.restore(snapshot["ctx"])
        self.owner = {str(rid): int(i) for rid, i, _ in snapshot["trials"]}
        self.status = {str(rid): str(s) for rid, _, s in snapshot["trials"]}
        self.n_running = sum(1 for s in self.status.values() if s == RUNNING)
        self.exited = {str(r) for r in snapshot["exited"]}
        self.early_exit = {str(r) for r in snapshot["early_exit"]}
        self.errored, self.exited_valid = (int(x) for x in snapshot["counts"])
        self.started = bool(snapshot["started"])
        self.shutdown = bool(snapshot["shutdown"])
        for bracket, state in zip(self.brackets, snapshot["brackets"], strict=True):
            bracket.load(state)
