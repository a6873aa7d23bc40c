"""Stop-based ASHA: `async_halving` (one bracket) and `adaptive_asha` (a tournament of brackets).

Exact Determined 0.38 semantics (`asha_stopping.go`, `adaptive_asha.go`, `tournament.go`).

Lengths. `T` is `max_time` in units of `time_metric`, or the legacy `max_length` value in its unit
(then the time metric is that unit: `batches`, `records` or `epochs`). A validation's time is
`metrics[time_metric]`; when the time metric is `batches` and absent, `steps_completed` is used.
A validation without the searcher metric or the time value ends the search as a failure (as in
Determined, where both must be present). Rung `i` of a bracket with `R` rungs and divisor `d`
needs `units_i = max(floor(T / d^(R-1-i)), 1)`; the last rung needs `T`.

One bracket (`async_halving`, `num_rungs` = R):

1. Initial trials: `min(mct, max_trials)` when `max_concurrent_trials` (mct) > 0, else
   `clamp(d^(R-1), 1, max_trials)`.
2. On a validation (metric negated when `smaller_is_better` is false), from the trial's current
   rung and while `time >= units(rung)`: insert the metric into the rung's sorted list (after
   equal values); at the last rung `Stop` the trial (it is finished); otherwise with
   `keep = max(floor(len(rung) / d), 1)`, `Stop` it if its position is `>= keep`, else move it up
   a rung and go on.
3. Whenever a `Stop` is issued and fewer than `max_trials` valid trials exist, `Create` one.
4. INVALID_HP: the trial's metrics leave every rung and a replacement is always created (it does
   not count). ERRORED / CANCELED: a worst value is recorded at the trial's current rung and a
   replacement is created while under `max_trials`. A trial that ends on its own
   (COMPLETED / USER_REQUESTED_STOP) gets no replacement.
5. Progress: `rung0_count / (1.2 * max_trials)`; once all trials are created,
   `max(that, exited_valid / max_trials)`.

Validations from a trial that was already stopped or has exited are ignored (Determined would
record a second entry for it). `Shutdown` once every created trial has exited; it is a failure
when every valid trial errored.

Tournament (`adaptive_asha`):

1. `maxRungs = min(max_rungs, floor(log_d T) + 1, floor(log_d max_trials) + 1)` (computed with
   exact integer logarithms for integral d, where Go's float log can be off by one, e.g. log_10 1000).
2. Rungs per bracket, unless `bracket_rungs` is given: aggressive `[maxRungs]`, standard
   `[(maxRungs-1)//2 + 1 .. maxRungs]`, conservative `[1 .. maxRungs]`; sorted descending.
3. Trials per bracket: `w_b = d^(r_b - 1) / r_b`, `trials_b = max(floor(w_b / sum(w) * max_trials), 1)`,
   the remainder to bracket 0.
4. Concurrency per bracket: mct 0 gives every bracket `max(trials_last_bracket, int(d))`; else mct is
   raised to at least the number of brackets, each gets `mct // n` and the remainder goes one each
   to the first brackets.
5. Every bracket runs the algorithm above; events go to the bracket that created the trial.
   Progress is the mean of the brackets' progress; `Shutdown` when every bracket is done.

Model-based sampling (Stalwart's, not Determined's): with `searcher.sampler: tpe` the brackets share
one `model_sampler.OptunaModel`: each new trial's hyperparameters are asked of Optuna's TPE instead
of drawn at random, and every rung result is told to it (an intermediate value at the rung's length;
COMPLETE at the last rung, PRUNED when stopped below it, FAIL with no result). Everything else above
is unchanged; the default `sampler: random` draws exactly as Determined does. With `sampler: evolution`
the shared model is an `evolution_sampler.EvolutionModel` instead: new trials are mutations of the
best trials at the longest rung with enough results (regularised evolution on the rung results), told the same
events.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

from stalwart.config.searcher_settings import AdaptiveAshaSettings, AsyncHalvingSettings, HalvingSettings
from stalwart.searcher._common import (
    WORST,
    MetricReader,
    SearchContext,
    clamp_progress,
    floor_log,
    rung_units,
)
from stalwart.searcher.base import Action, Create, SearchMethod, Shutdown, Stop, TrialExit
from stalwart.searcher.space import HParamSpace

MODES = ("aggressive", "standard", "conservative")


def max_rungs_for(max_rungs: int, total: int, max_trials: int, divisor: float) -> int:
    return max(1, min(max_rungs, floor_log(total, divisor) + 1, floor_log(max_trials, divisor) + 1))


def bracket_rungs_for(mode: str, max_rungs: int) -> list[int]:
    """The brackets' rung counts for a mode (one of MODES: the config checked it)."""
    if mode == "aggressive":
        rungs = [max_rungs]
    elif mode == "conservative":
        rungs = list(range(1, max_rungs + 1))
    else:
        rungs = list(range((max_rungs - 1) // 2 + 1, max_rungs + 1))
    return sorted(rungs, reverse=True)


def bracket_max_trials(max_trials: int, divisor: float, brackets: list[int]) -> list[int]:
    weights = [divisor ** (r - 1) / r for r in brackets]
    total = sum(weights)
    out = [max(int(w / total * max_trials), 1) for w in weights]
    out[0] += max_trials - sum(out)
    return out


def bracket_max_concurrent(mct: int, divisor: float, trials: list[int]) -> list[int]:
    n = len(trials)
    if mct == 0:
        return [max(trials[-1], int(divisor))] * n
    mct = max(mct, n)
    out = [mct // n] * n
    for i in range(mct % n):
        out[i] += 1
    return out


def plan_brackets(settings: AdaptiveAshaSettings, total: int) -> tuple[list[int], list[int], list[int]]:
    """`(rungs, max_trials, max_concurrent)` per bracket for an adaptive searcher."""
    divisor, max_trials = settings.divisor, settings.max_trials
    if settings.bracket_rungs:
        rungs = sorted(settings.bracket_rungs, reverse=True)
    else:
        cap = max_rungs_for(settings.max_rungs, total, max_trials, divisor)
        rungs = bracket_rungs_for(settings.mode, cap)
    trials = bracket_max_trials(max_trials, divisor, rungs)
    return rungs, trials, bracket_max_concurrent(settings.max_concurrent_trials, divisor, trials)


def draw_trial(ctx: SearchContext, space: HParamSpace, model: Any) -> tuple[str, dict[str, Any], int]:
    """(request id, hyperparameters, seed) of a new trial: drawn at random (Determined's order of draws), or
    asked of the model."""
    if model is None:
        hparams = space.sample(ctx.rng)
        seed = ctx.trial_seed()
        return ctx.new_request_id(), hparams, seed
    rid = ctx.new_request_id()
    return rid, model.ask(rid), ctx.trial_seed()


def _metric_of(entry: list[Any]) -> float:
    metric: float = entry[0]
    return metric


def _insert(rung: list[list[Any]], metric: float, rid: str) -> int:
    """Insert into an ascending list of `[metric, rid, ...]`, after equal values; the index."""
    pos = bisect.bisect_right(rung, metric, key=_metric_of)
    rung.insert(pos, [metric, rid])
    return pos


class Bracket:
    """One stop-based ASHA bracket."""

    def __init__(self, ctx: SearchContext, space: HParamSpace, *, num_rungs: int, divisor: float,
                 max_trials: int, max_concurrent: int, total: int) -> None:
        self.ctx = ctx
        self.space = space
        self.num_rungs = num_rungs
        self.divisor = divisor
        self.max_trials = max_trials
        self.max_concurrent = max_concurrent
        self.total = total
        self.units = rung_units(total, divisor, num_rungs)
        self.rungs: list[list[list[Any]]] = [[] for _ in range(num_rungs)]
        self.trial_rung: dict[str, int] = {}
        self.stopped: set[str] = set()
        self.exited: set[str] = set()
        self.early_exit: set[str] = set()
        self.invalid = 0
        self.exited_valid = 0
        self.errored = 0
        self.model: Any = None  # a model shared by the brackets with `sampler: tpe` or `evolution`, else random draws

    # -- helpers ------------------------------------------------------------------------------

    @property
    def valid_trials(self) -> int:
        return len(self.trial_rung) - self.invalid

    def done(self) -> bool:
        return bool(self.trial_rung) and len(self.exited) == len(self.trial_rung)

    def wants(self, rid: str) -> bool:
        """Whether a validation from `rid` can matter (a live trial not yet stopped)."""
        return rid in self.trial_rung and rid not in self.stopped and rid not in self.exited

    def create(self) -> Create:
        rid, hparams, seed = draw_trial(self.ctx, self.space, self.model)
        self.trial_rung[rid] = 0
        return Create(rid, hparams, seed, self.total)

    def initial_trials(self) -> int:
        if self.max_concurrent > 0:
            return min(self.max_concurrent, self.max_trials)
        return max(1, min(int(self.divisor ** (self.num_rungs - 1)), self.max_trials))

    def initial_operations(self) -> list[Action]:
        return [self.create() for _ in range(self.initial_trials())]

    # -- events -------------------------------------------------------------------------------

    def on_validation(self, rid: str, metric: float, time: float) -> list[Action]:
        if not self.wants(rid):
            return []
        actions: list[Action] = []
        rung_index = self.trial_rung[rid]
        while rung_index < self.num_rungs and time >= self.units[rung_index]:
            rung = self.rungs[rung_index]
            pos = _insert(rung, metric, rid)
            if self.model is not None:
                self.model.report(rid, self.units[rung_index], metric)
            if rung_index == self.num_rungs - 1:
                actions.append(self._stop(rid))
                if self.model is not None:
                    self.model.finish(rid, "COMPLETE", metric)
                break
            keep = max(int(len(rung) // self.divisor), 1)
            if pos >= keep:
                actions.append(self._stop(rid))
                if self.model is not None:
                    self.model.finish(rid, "PRUNED")
                break
            rung_index += 1
            self.trial_rung[rid] = rung_index
        if actions and self.valid_trials < self.max_trials:
            actions.append(self.create())
        return actions

    def _stop(self, rid: str) -> Stop:
        self.stopped.add(rid)
        return Stop(rid)

    def on_exit(self, rid: str, how: TrialExit) -> list[Action]:
        if rid not in self.trial_rung or rid in self.exited:
            return []
        self.exited.add(rid)
        if self.model is not None:  # a no-op for a trial already told (stopped, finished or closed out)
            self.model.close(rid, invalid=how is TrialExit.INVALID_HP)
        if how is TrialExit.INVALID_HP:
            for rung in self.rungs[: self.trial_rung[rid] + 1]:
                rung[:] = [entry for entry in rung if entry[1] != rid]
            self.invalid += 1
            return [self.create()]
        self.exited_valid += 1
        if how in (TrialExit.ERRORED, TrialExit.CANCELED) and rid not in self.stopped:
            if how is TrialExit.ERRORED:
                self.errored += 1
            self.early_exit.add(rid)
            _insert(self.rungs[self.trial_rung[rid]], WORST, rid)
            if self.valid_trials < self.max_trials:
                return [self.create()]
        return []

    def progress(self) -> float:
        value = len(self.rungs[0]) / (1.2 * self.max_trials)
        if self.valid_trials >= self.max_trials:
            value = max(value, self.exited_valid / self.max_trials)
        return clamp_progress(value)

    # -- state --------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "rungs": self.rungs,
            "trial_rung": [[rid, r] for rid, r in self.trial_rung.items()],
            "stopped": sorted(self.stopped, key=int),
            "exited": sorted(self.exited, key=int),
            "early_exit": sorted(self.early_exit, key=int),
            "invalid": self.invalid,
            "exited_valid": self.exited_valid,
            "errored": self.errored,
        }

    def load(self, state: Mapping[str, Any]) -> None:
        self.rungs = [[[float(m), str(r)] for m, r in rung] for rung in state["rungs"]]
        self.trial_rung = {str(rid): int(r) for rid, r in state["trial_rung"]}
        self.stopped = set(state["stopped"])
        self.exited = set(state["exited"])
        self.early_exit = set(state["early_exit"])
        self.invalid = int(state["invalid"])
        self.exited_valid = int(state["exited_valid"])
        self.errored = int(state["errored"])

    def describe(self) -> dict[str, Any]:
        return {"num_rungs": self.num_rungs, "max_trials": self.max_trials,
                "max_concurrent_trials": self.max_concurrent, "rung_lengths": list(self.units)}


class Tournament(SearchMethod):
    """Brackets side by side; each event goes to the bracket that created the trial."""

    def __init__(self, ctx: SearchContext, reader: MetricReader, brackets: list[Any], model: Any = None) -> None:
        self.ctx = ctx
        self.reader = reader
        self.brackets = brackets
        self.owner: dict[str, int] = {}
        self.started = False
        self.shutdown = False
        self.model = model
        for bracket in brackets:
            bracket.model = model

    def _route(self, index: int, actions: list[Action]) -> list[Action]:
        for action in actions:
            if isinstance(action, Create):
                self.owner[action.request_id] = index
        return actions

    def _finish(self, actions: list[Action]) -> list[Action]:
        if not self.shutdown and self.started and all(b.done() for b in self.brackets):
            self.shutdown = True
            exited = sum(b.exited_valid for b in self.brackets)
            actions.append(self.end_of_search(exited, sum(b.errored for b in self.brackets)))
        return actions

    def initial_operations(self) -> list[Action]:
        if self.started:
            return []
        self.started = True
        actions: list[Action] = []
        for i, bracket in enumerate(self.brackets):
            actions += self._route(i, bracket.initial_operations())
        return actions

    def on_validation_completed(self, request_id: str, metrics: dict[str, Any], steps_completed: int) -> list[Action]:
        index = self.owner.get(request_id)
        if index is None or self.shutdown:
            return []
        bracket = self.brackets[index]
        if not bracket.wants(request_id):
            return []
        problem = self.reader.missing(metrics, steps_completed)
        if problem is not None:
            self.shutdown = True
            return [Shutdown(failure=True, reason=f"trial {request_id}: {problem}")]
        value = self.reader.value(metrics)
        time = self.reader.time(metrics, steps_completed)
        return self._finish(self._route(index, bracket.on_validation(request_id, value, time)))

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        index = self.owner.get(request_id)
        if index is None:
            return []
        return self._finish(self._route(index, self.brackets[index].on_exit(request_id, how)))

    def progress(self, trial_progress: dict[str, float]) -> float:
        if self.shutdown:
            return 1.0
        return clamp_progress(sum(b.progress() for b in self.brackets) / len(self.brackets))

    def milestones(self) -> list[int]:
        return sorted({u for b in self.brackets for u in b.units})

    def describe(self) -> list[dict[str, Any]]:
        return [b.describe() for b in self.brackets]

    def snapshot(self) -> dict[str, Any]:
        return {
            "kind": type(self).__name__,
            "ctx": self.ctx.snapshot(),
            "started": self.started,
            "shutdown": self.shutdown,
            "owner": [[rid, i] for rid, i in self.owner.items()],
            "brackets": [b.state() for b in self.brackets],
            **({"model": self.model.state()} if self.model is not None else {}),
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.ctx.restore(snapshot["ctx"])
        self.started = bool(snapshot["started"])
        self.shutdown = bool(snapshot["shutdown"])
        self.owner = {str(rid): int(i) for rid, i in snapshot["owner"]}
        for bracket, state in zip(self.brackets, snapshot["brackets"], strict=True):
            bracket.load(state)
        if self.model is not None:
            self.model.load(snapshot.get("model") or [])


def async_halving(settings: AsyncHalvingSettings, space: HParamSpace, experiment_seed: int | None,
                  bracket_cls: type = Bracket) -> Tournament:
    ctx = SearchContext(experiment_seed)
    total = settings.length.units
    bracket = bracket_cls(ctx, space, num_rungs=settings.num_rungs, divisor=settings.divisor,
                          max_trials=settings.max_trials, max_concurrent=settings.max_concurrent_trials, total=total)
    reader = MetricReader.of(settings, settings.length.time_metric)
    return Tournament(ctx, reader, [bracket], sampler_model(settings, ctx, space))


def adaptive_asha(settings: AdaptiveAshaSettings, space: HParamSpace, experiment_seed: int | None,
                  bracket_cls: type = Bracket) -> Tournament:
    total = settings.length.units
    rungs, trials, concurrency = plan_brackets(settings, total)
    ctx = SearchContext(experiment_seed)
    brackets = [
        bracket_cls(ctx, space, num_rungs=r, divisor=settings.divisor, max_trials=n, max_concurrent=c, total=total)
        for r, n, c in zip(rungs, trials, concurrency, strict=True)
    ]
    reader = MetricReader.of(settings, settings.length.time_metric)
    return Tournament(ctx, reader, brackets, sampler_model(settings, ctx, space))


def sampler_model(settings: HalvingSettings, ctx: SearchContext, space: HParamSpace) -> Any:
    """None for `sampler: random` (the default: Determined's random draws), else the shared model."""
    if settings.sampler == "random":
        return None
    if settings.sampler == "evolution":
        from stalwart.searcher.evolution_sampler import EvolutionModel

        return EvolutionModel(space, ctx.rng)
    from stalwart.searcher.model_sampler import OptunaModel

    return OptunaModel(space, ctx.rng, settings.sampler, what="searcher.sampler: 'tpe'")
