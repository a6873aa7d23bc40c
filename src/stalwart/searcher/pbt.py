"""`pbt`: Population Based Training, as Determined's PBT searcher had it (removed in 0.38).

Fields: `metric`, `smaller_is_better`, `population_size`, `num_rounds`, `length_per_round` (an int
in `time_metric` units, or a length map such as `{batches: 1000}` whose unit becomes the time
metric), `time_metric` (default `batches`), `replace_function: {truncate_fraction: 0.2}`,
`explore_function: {resample_probability: 0.2, perturb_factor: 0.2}`.

Rounds. `population_size` trials are created with `length = L` (`length_per_round`). A trial of
round k (0-based) trains to `(k + 1) * L` in absolute units, reports, and is paused (`Pause`);
in the last round it is stopped as it reports (`Stop`). When the whole population has reported:

* the trials are ranked by the metric (best first; ties keep population order) and
  `n = floor(truncate_fraction * population_size)` is the truncation size;
* exploit: the worst `n` are stopped, and each of the best `n` is cloned: a new trial is created
  with `checkpoint_from` = the parent's request id, `length` = the parent's target + L (it starts
  from the parent's latest checkpoint, step count included), and explored hyperparameters;
* the others continue: `Resume(rid, target + L)`.

Explore (per non-const hyperparameter, in leaf order): with probability `resample_probability`
draw it afresh from its distribution; otherwise perturb it: `int` becomes
`ceil(v * (1 + f))` or `floor(v * (1 - f))` (each with probability 1/2), `double` and `log` are
multiplied by `1 + f` or `1 - f`; results are clipped to the bounds (`log` bounds are
`base^minval .. base^maxval`); a `categorical` value is kept. `f` is `perturb_factor`.

Exits. INVALID_HP: the trial is replaced in its slot by a new one drawn the same way (a fresh
sample in round 0, a fresh exploration of the same parent later), not counted. ERRORED /
CANCELED, or a trial that ends on its own before its round's length: a worst-value result for the
round; such a trial cannot continue, so if it would survive, its slot is filled by another clone of
the best trials (parents taken in rank order, cycling). If no trial is left to clone, the search
ends (a failure when every trial errored).

Progress: `(round + reported / population_size) / num_rounds`.
"""

from __future__ import annotations

from typing import Any

from stalwart.searcher._common import WORST, MetricReader, SearchContext, clamp_progress
from stalwart.searcher.base import Action, Create, Pause, Resume, SearchMethod, Shutdown, Stop, TrialExit
from stalwart.searcher.space import HParamSpace

RUNNING, PAUSED, CLOSED = "running", "paused", "closed"


class PBTSearch(SearchMethod):
    def __init__(self, space: HParamSpace, experiment_seed: int | None, reader: MetricReader, *,
                 population_size: int, num_rounds: int, length_per_round: int,
                 truncate_fraction: float = 0.2, resample_probability: float = 0.2,
                 perturb_factor: float = 0.2) -> None:
        self.ctx = SearchContext(experiment_seed)
        self.space = space
        self.reader = reader
        self.population_size = population_size
        self.num_rounds = num_rounds
        self.length = length_per_round
        self.truncate_fraction = truncate_fraction
        self.resample_probability = resample_probability
        self.perturb_factor = perturb_factor
        self.round = 0
        self.members: list[str] = []
        self.results: dict[str, float] = {}
        self.trials: dict[str, dict[str, Any]] = {}  # rid -> {hparams, target, parent, status}
        self.exited: set[str] = set()
        self.early_exit: set[str] = set()
        self.errored = 0
        self.exited_valid = 0
        self.started = False
        self.finished = False
        self.shutdown = False

    # -- helpers ------------------------------------------------------------------------------

    def _new_trial(self, target: int, parent: str | None) -> Create:
        if parent is None:
            hparams = self.space.sample(self.ctx.rng)
        else:
            hparams = self.space.explore(self.trials[parent]["hparams"], self.ctx.rng,
                                         self.resample_probability, self.perturb_factor)
        seed = self.ctx.trial_seed()
        rid = self.ctx.new_request_id()
        self.trials[rid] = {"hparams": hparams, "target": target, "parent": parent, "status": RUNNING}
        return Create(rid, hparams, seed, target, checkpoint_from=parent)

    def _status(self, rid: str) -> str:
        status: str = self.trials[rid]["status"]
        return status

    def _set(self, rid: str, status: str) -> None:
        self.trials[rid]["status"] = status

    def _record(self, rid: str, metric: float) -> list[Action]:
        self.results[rid] = metric
        actions: list[Action] = []
        alive = rid not in self.early_exit
        if self.round == self.num_rounds - 1:
            if alive:
                actions.append(Stop(rid))
            self._set(rid, CLOSED)
        else:
            if alive:
                actions.append(Pause(rid))
            self._set(rid, PAUSED)
        if len(self.results) == len(self.members):
            actions += self._end_round()
        return actions

    def _end_round(self) -> list[Action]:
        if self.round == self.num_rounds - 1:
            self.finished = True
            return []
        order = {rid: i for i, rid in enumerate(self.members)}
        ranked = sorted(self.members, key=lambda r: (self.results[r], order[r]))
        n_trunc = int(self.truncate_fraction * self.population_size)
        n_trunc = min(n_trunc, len(ranked) // 2)
        losers = ranked[len(ranked) - n_trunc:] if n_trunc else []
        keep = ranked[: len(ranked) - n_trunc]
        parents = [rid for rid in keep if rid not in self.early_exit]
        actions: list[Action] = []
        for rid in losers:
            if self._status(rid) == PAUSED and rid not in self.early_exit:
                actions.append(Stop(rid))
                self.exited.add(rid)
                self.exited_valid += 1
            self._set(rid, CLOSED)
        survivors = []
        for rid in keep:
            if rid in self.early_exit:
                self._set(rid, CLOSED)
            else:
                survivors.append(rid)
        slots = len(ranked) - len(survivors)
        if not parents:
            self.finished = True
            return actions
        self.round += 1
        self.results = {}
        self.members = []
        for rid in survivors:
            target = self.trials[rid]["target"] + self.length
            self.trials[rid]["target"] = target
            self._set(rid, RUNNING)
            self.members.append(rid)
            actions.append(Resume(rid, target))
        for i in range(slots):
            parent = parents[i % len(parents)]
            create = self._new_trial(self.trials[parent]["target"], parent)
            self.members.append(create.request_id)
            actions.append(create)
        return actions

    def _finish(self, actions: list[Action]) -> list[Action]:
        if (self.finished and not self.shutdown
                and all(rid in self.exited for rid in self.trials)):
            self.shutdown = True
            actions.append(self.end_of_search(self.exited_valid, self.errored))
        return actions

    # -- events -------------------------------------------------------------------------------

    def initial_operations(self) -> list[Action]:
        if self.started:
            return []
        self.started = True
        actions: list[Action] = []
        for _ in range(self.population_size):
            create = self._new_trial(self.length, None)
            self.members.append(create.request_id)
            actions.append(create)
        return actions

    def on_validation_completed(self, request_id: str, metrics: dict[str, Any], steps_completed: int) -> list[Action]:
        trial = self.trials.get(request_id)
        if trial is None or trial["status"] != RUNNING or self.shutdown:
            return []
        problem = self.reader.missing(metrics, steps_completed)
        if problem is not None:
            self.shutdown = True
            return [Shutdown(failure=True, reason=f"trial {request_id}: {problem}")]
        value, time = self.reader.read(metrics, steps_completed)
        if time < trial["target"]:
            return []
        return self._finish(self._record(request_id, value))

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        trial = self.trials.get(request_id)
        if trial is None or request_id in self.exited:
            return []
        status = trial["status"]
        if status == PAUSED and how in (TrialExit.COMPLETED, TrialExit.USER_REQUESTED_STOP):
            return []  # the run a Pause ended (not reported by the master; tolerated)
        self.exited.add(request_id)
        if how is TrialExit.INVALID_HP and status == RUNNING and request_id in self.members:
            self._set(request_id, CLOSED)
            create = self._new_trial(trial["target"], trial["parent"])
            self.members[self.members.index(request_id)] = create.request_id
            return self._finish([create])
        self.exited_valid += 1
        if status == CLOSED:
            return self._finish([])
        if how is TrialExit.ERRORED:
            self.errored += 1
        self.early_exit.add(request_id)
        if status == RUNNING and request_id in self.members:
            return self._finish(self._record(request_id, WORST))
        return self._finish([])

    def progress(self, trial_progress: dict[str, float]) -> float:
        if self.shutdown:
            return 1.0
        done = self.round + len(self.results) / max(len(self.members), 1)
        return clamp_progress(done / self.num_rounds)

    def milestones(self) -> list[int]:
        return [self.length * (k + 1) for k in range(self.num_rounds)]

    # -- state --------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "kind": "PBTSearch",
            "ctx": self.ctx.snapshot(),
            "round": self.round,
            "members": list(self.members),
            "results": [[rid, v] for rid, v in self.results.items()],
            "trials": [[rid, t["hparams"], t["target"], t["parent"], t["status"]] for rid, t in self.trials.items()],
            "exited": sorted(self.exited, key=int),
            "early_exit": sorted(self.early_exit, key=int),
            "counts": [self.errored, self.exited_valid],
            "flags": [self.started, self.finished, self.shutdown],
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.ctx.restore(snapshot["ctx"])
        self.round = int(snapshot["round"])
        self.members = [str(r) for r in snapshot["members"]]
        self.results = {str(r): float(v) for r, v in snapshot["results"]}
        self.trials = {str(rid): {"hparams": hp, "target": int(target), "parent": parent, "status": str(status)}
                       for rid, hp, target, parent, status in snapshot["trials"]}
        self.exited = {str(r) for r in snapshot["exited"]}
        self.early_exit = {str(r) for r in snapshot["early_exit"]}
        self.errored, self.exited_valid = (int(x) for x in snapshot["counts"])
        self.started, self.finished, self.shutdown = (bool(x) for x in snapshot["flags"])
