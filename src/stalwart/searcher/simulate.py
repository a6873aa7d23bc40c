"""Run a searcher against a synthetic objective with simulated workers, and preview a search.

`simulate(config, metric_fn, max_workers=W)` plays the master's part with W workers and a
simulated clock (no real time passes):

* `metric_fn(hparams, step)` gives the searcher metric of a trial with these hyperparameters after
  `step` units of the time metric; it may return `(metric, elapsed)` where `elapsed` is the
  simulated time that training to `step` takes from scratch (default: `step`). Raising
  `SimulatedExit(TrialExit.X)` ends the trial that way at that point.
* A trial trains from its current step toward its `length` (`Create.length`, else the config's
  max_time/max_length, else `default_length`) and validates at every milestone of the searcher
  (rung lengths, round ends), every `validate_every` units if given, and at its length. With
  `validation_period=P` validations fall on multiples of P instead, as a real trial's with
  `min_validation_period: P` do: a milestone between two is reached at the next multiple of P (or at
  the trial's length), which is where the searcher judges it (only those validations are simulated). A
  validation reports `{metric: value, time_metric: step}` (plus `batches` when that is the time
  metric). A trial that reaches its length and is neither paused nor stopped exits COMPLETED.
* `Stop` ends a running trial at once (COMPLETED is reported); a paused or queued one is closed.
  `Pause` frees the worker (no exit is reported); `Resume` re-queues the trial (a `Pause` and a
  `Resume` in one batch just let it keep its worker). `Create(checkpoint_from=R)` starts at R's
  latest checkpoint step (the step of R's last validation).
* Trials wait in a FIFO queue for a free worker. The run ends at `Shutdown`, when nothing can
  happen any more, or at `time_limit`.

`preview(config)` runs `simulate` with a random (seeded) metric and summarises how many trials
train to which length: the equivalent of `det preview-search`. Its trials validate where the
config's `min_validation_period` puts validations, and it warns about every rung a trial must be
judged at before the end of its training that falls between those validations.
"""

from __future__ import annotations

import heapq
import json
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stalwart.config import LENGTH_UNITS, Length, SearcherSettings, TrialLength, parse_length, searcher_settings, views
from stalwart.searcher.base import Action, Create, Pause, Resume, SearchMethod, Shutdown, Stop, TrialExit


class SimulatedExit(Exception):
    """Raised by a `metric_fn` to end the trial with `how` (e.g. INVALID_HP, ERRORED)."""

    def __init__(self, how: TrialExit) -> None:
        super().__init__(how.value)
        self.how = how


@dataclass
class SimTrial:
    request_id: str
    hparams: dict[str, Any]
    seed: int
    created_at: float
    target: int
    parent: str | None = None
    start: float = 0.0  # the step it started from (its parent's checkpoint)
    step: float = 0.0  # where training is now
    checkpoint_step: float = 0.0  # step of the latest validation (a checkpoint is taken there)
    status: str = "queued"  # queued | running | paused | done
    exit: TrialExit | None = None
    ended_at: float | None = None
    validations: list[tuple[float, float, float]] = field(default_factory=list)  # (time, step, metric)
    busy_time: float = 0.0

    @property
    def last_metric(self) -> float | None:
        return self.validations[-1][2] if self.validations else None


@dataclass
class SimulationResult:
    trials: dict[str, SimTrial]
    actions: list[tuple[float, Action]]
    elapsed: float
    best_trace: list[tuple[float, float]]  # (time, best metric so far), raw metric
    shutdown: Shutdown | None
    smaller_is_better: bool
    worker_time: float  # sum of training time over workers

    @property
    def best(self) -> float | None:
        return self.best_trace[-1][1] if self.best_trace else None

    def time_to_reach(self, threshold: float) -> float | None:
        """The first simulated time the best metric was at least as good as `threshold`."""
        for time, value in self.best_trace:
            if (value <= threshold) if self.smaller_is_better else (value >= threshold):
                return time
        return None

    def units_trained(self) -> float:
        """The units of the time metric trained by all trials, each counted from where it started."""
        return sum(max(0.0, trial.step - trial.start) for trial in self.trials.values())

    def lengths(self) -> dict[int, int]:
        """How many trials trained to each final step."""
        out: dict[int, int] = {}
        for trial in self.trials.values():
            key = int(round(trial.step))
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items()))


def judged_at(rung: int, period: int) -> int:
    """The first validation at or past `rung` of a trial that validates every `period` units."""
    return -(-rung // period) * period


def _call_metric(metric_fn: Callable[..., Any], hparams: dict[str, Any], step: float) -> tuple[float, float]:
    value = metric_fn(hparams, step)
    if isinstance(value, tuple):
        return float(value[0]), float(value[1])
    return float(value), float(step)


def simulate(config: Mapping[str, Any], metric_fn: Callable[[dict[str, Any], float], Any], *, max_workers: int,
             validate_every: int | None = None, time_limit: float | None = None,
             default_length: int = 100, search: SearchMethod | None = None,
             max_events: int = 10_000_000, validation_period: int | None = None) -> SimulationResult:
    """Drive a searcher with `max_workers` simulated workers; see the module docstring."""
    from stalwart.searcher.factory import make_search_method

    if max_workers < 1:
        raise ValueError("max_workers must be >= 1")
    search = make_search_method(config) if search is None else search
    settings = search.settings or searcher_settings(config)  # a benchmark's peer searcher has none of its own
    length = _length(settings)
    reader = getattr(search, "reader", None)  # e.g. pbt's time metric is its own field
    time_metric = getattr(reader, "time_metric", None) or (length.time_metric if length else None) or "batches"
    metric_name = settings.metric
    smaller = settings.smaller_is_better
    fallback_length = length.units if length else default_length
    milestones = sorted(set(search.milestones()))
    if validation_period:
        milestones = sorted({judged_at(m, validation_period) for m in milestones})

    trials: dict[str, SimTrial] = {}
    queue: list[str] = []
    running: set[str] = set()
    heap: list[tuple[float, int, str, float]] = []  # (time, seq, rid, step) of the next validation
    seq = 0
    now = 0.0
    log: list[tuple[float, Action]] = []
    best_trace: list[tuple[float, float]] = []
    shutdown: Shutdown | None = None
    pending_exits: list[tuple[str, TrialExit]] = []
    worker_time = 0.0
    curve_cache: dict[tuple[str, float], tuple[float, float]] = {}

    def curve(trial: SimTrial, step: float) -> tuple[float, float]:
        key = (trial.request_id, step)
        if key not in curve_cache:
            if step <= 0:
                curve_cache[key] = (math.nan, 0.0)
            else:
                curve_cache[key] = _call_metric(metric_fn, trial.hparams, step)
        return curve_cache[key]

    def next_stop(trial: SimTrial) -> float:
        candidates = [m for m in milestones if m > trial.step + 1e-9 and m < trial.target]
        if validate_every:
            candidates.append((math.floor(trial.step / validate_every + 1e-9) + 1) * validate_every)
        candidates.append(trial.target)
        return float(min(c for c in candidates if c > trial.step + 1e-9) if any(
            c > trial.step + 1e-9 for c in candidates) else trial.target)

    def schedule(trial: SimTrial) -> None:
        nonlocal seq, worker_time
        step = next_stop(trial)
        try:
            _, t_to = curve(trial, step)
            _, t_from = curve(trial, trial.step)
        except SimulatedExit as exit_:
            # it fails right away, using its worker for no time
            trial.status = "done"
            trial.exit = exit_.how
            trial.ended_at = now
            running.discard(trial.request_id)
            pending_exits.append((trial.request_id, exit_.how))
            return
        duration = max(t_to - t_from, 0.0)
        worker_time += duration
        trial.busy_time += duration
        seq += 1
        heapq.heappush(heap, (now + duration, seq, trial.request_id, step))

    def start_workers() -> None:
        while queue and len(running) < max_workers:
            rid = queue.pop(0)
            trial = trials[rid]
            if trial.status != "queued":
                continue
            trial.status = "running"
            running.add(rid)
            schedule(trial)

    def end_trial(trial: SimTrial, how: TrialExit, report: bool) -> None:
        trial.status = "done"
        trial.exit = how
        trial.ended_at = now
        running.discard(trial.request_id)
        if report:
            pending_exits.append((trial.request_id, how))

    def apply(actions: list[Action]) -> None:
        nonlocal shutdown
        pausing: list[str] = []
        trial: SimTrial | None  # the trial an action names; None when it is unknown
        for action in actions:
            log.append((now, action))
            if isinstance(action, Create):
                parent = trials.get(action.checkpoint_from) if action.checkpoint_from else None
                length = action.length if action.length is not None else fallback_length
                trial = SimTrial(action.request_id, action.hparams, action.seed, now, int(length),
                                 parent=action.checkpoint_from)
                if parent is not None:
                    trial.start = trial.step = trial.checkpoint_step = parent.checkpoint_step
                trials[action.request_id] = trial
                queue.append(action.request_id)
            elif isinstance(action, Stop):
                trial = trials.get(action.request_id)
                if trial is None or trial.status == "done":
                    continue
                if trial.request_id in pausing:
                    pausing.remove(trial.request_id)
                if trial.status == "paused":
                    end_trial(trial, TrialExit.COMPLETED, report=False)
                else:
                    end_trial(trial, TrialExit.COMPLETED, report=True)
            elif isinstance(action, Pause):
                trial = trials.get(action.request_id)
                if trial is not None and trial.status in ("running", "queued"):
                    pausing.append(trial.request_id)
            elif isinstance(action, Resume):
                trial = trials.get(action.request_id)
                if trial is None or trial.status == "done":
                    continue
                trial.target = int(action.length)
                if trial.request_id in pausing:
                    pausing.remove(trial.request_id)  # keeps its worker and goes on
                    if trial.status == "running" and not any(e[2] == trial.request_id for e in heap):
                        schedule(trial)
                elif trial.status == "paused":
                    trial.status = "queued"
                    queue.append(trial.request_id)
            elif isinstance(action, Shutdown):
                shutdown = action
        for rid in pausing:
            trial = trials[rid]
            if trial.status == "running":
                running.discard(rid)
            if trial.status in ("running", "queued"):
                trial.status = "paused"
                if rid in queue:
                    queue.remove(rid)

    def drain_exits() -> None:
        while pending_exits and shutdown is None:
            rid, how = pending_exits.pop(0)
            apply(search.on_trial_exited(rid, how))

    apply(search.initial_operations())
    events = 0
    while shutdown is None and events < max_events:
        drain_exits()
        if shutdown is not None:
            break
        start_workers()
        if pending_exits:
            continue
        if not heap:
            break
        time, _, rid, step = heapq.heappop(heap)
        if time_limit is not None and time > time_limit:
            now = time_limit
            break
        trial = trials[rid]
        if trial.status != "running" or rid not in running:
            continue
        now = time
        events += 1
        trial.step = step
        try:
            value, _ = curve(trial, step)
        except SimulatedExit as exit_:
            end_trial(trial, exit_.how, report=True)
            continue
        trial.checkpoint_step = step
        trial.validations.append((now, step, value))
        if not best_trace or ((value < best_trace[-1][1]) if smaller else (value > best_trace[-1][1])):
            best_trace.append((now, value))
        metrics = {metric_name: value, time_metric: step}
        if time_metric != "batches":
            metrics.setdefault("batches", step)
        apply(search.on_validation_completed(rid, metrics, int(step)))
        if trial.status == "running" and rid in running:
            if trial.step >= trial.target - 1e-9:
                end_trial(trial, TrialExit.COMPLETED, report=True)
            elif not any(e[2] == rid for e in heap):
                schedule(trial)
    return SimulationResult(trials, log, now, best_trace, shutdown, smaller, worker_time)


# -- preview ----------------------------------------------------------------------------------------


@dataclass
class Preview:
    """What a search would do, from a simulation with random metrics."""

    searcher: str
    total_trials: int
    unit: str
    rows: list[tuple[int, int]]  # (trials, trained length), shortest first
    brackets: list[dict[str, Any]]  # per bracket: rung lengths and how many trials reached each rung
    validations: str = ""  # where the simulated trials validate, when the searcher judges them at rungs
    warnings: list[str] = field(default_factory=list)  # rungs that fall between the config's validations

    def text(self) -> str:
        lines = [f"Searcher: {self.searcher}",
                 f"This search will create a total of {self.total_trials} trial(s).", ""]
        width = max([len("Trials")] + [len(str(n)) for n, _ in self.rows])
        lines.append(f"{'Trials':>{width}} | Training length ({self.unit})")
        lines.append("-" * (width + 1) + "+" + "-" * 24)
        for n, length in self.rows:
            lines.append(f"{n:>{width}} | {length}")
        if self.validations:
            lines += ["", self.validations]
        for i, bracket in enumerate(self.brackets):
            lines.append("")
            lines.append(f"Bracket {i} ({len(bracket['rungs'])} rungs, up to {bracket['max_trials']} trials):")
            for r, rung in enumerate(bracket["rungs"]):
                lines.append(f"  rung {r}: {rung['trials']} trial(s) train to {rung['length']} {self.unit}")
        return "\n".join(lines)


def _length(settings: SearcherSettings) -> TrialLength | None:
    """The trial length of searchers that have one (pbt has a length per round instead)."""
    length = getattr(settings, "length", None)
    return length if isinstance(length, TrialLength) else None


def preview(config: Mapping[str, Any], *, max_workers: int | None = None, seed: int | None = None) -> Preview:
    """Simulate the search with a random metric (seeded by `seed` or the experiment seed), its trials validating
    where the config's `min_validation_period` puts validations."""
    from stalwart.searcher.factory import make_search_method

    base = seed if seed is not None else (views.experiment_seed(config) or 0)

    def metric_fn(hparams: dict[str, Any], step: float) -> float:
        rng = random.Random(f"{base}:{json.dumps(hparams, sort_keys=True, default=str)}")
        return rng.random() + 0.0 * step

    search = make_search_method(config)
    settings = search.settings or searcher_settings(config)
    mct = getattr(settings, "max_concurrent_trials", None)
    workers = max_workers or (mct if isinstance(mct, int) and mct > 0 else 16)
    length = _length(settings)
    unit = length.time_metric if length else None
    period = validation_period(config)
    every = validation_every(config, settings)
    result = simulate(config, metric_fn, max_workers=workers, search=search, validation_period=every)
    rows = [(n, units) for units, n in result.lengths().items()]
    rungs = search.milestones() if length else []
    ends = _ends(result, length) if length else set()
    warnings = rung_warnings(rungs, ends, period, unit) if unit else []
    return Preview(settings.name, len(result.trials), unit or "units", rows, _brackets(search, result),
                   _validations(rungs, ends, every, unit), warnings)


def _brackets(search: SearchMethod, result: SimulationResult) -> list[dict[str, Any]]:
    """Per bracket of a bracketed searcher: its rung lengths, how many trials reached each, its trials."""
    brackets: list[dict[str, Any]] = []
    describe = getattr(search, "describe", None)
    owner = getattr(search, "owner", None)
    if callable(describe) and isinstance(owner, dict):
        for index, info in enumerate(describe()):
            mine = [t for rid, t in result.trials.items() if owner.get(rid) == index]
            rungs = [{"length": length, "trials": sum(1 for t in mine if t.step >= length - 1e-9)}
                     for length in info["rung_lengths"]]
            brackets.append({"rungs": rungs, "max_trials": info["max_trials"]})
    return brackets


# -- validations and rungs ----------------------------------------------------------------------------


def validation_period(config: Mapping[str, Any]) -> Length | None:
    """The config's `min_validation_period`, or None when it is absent or 0 (no periodic validation)."""
    value = config.get("min_validation_period")
    if value is None:
        return None
    period = parse_length(value, "min_validation_period", allow_bare_int=True)
    return period if period.value > 0 else None


def validation_every(config: Mapping[str, Any], settings: SearcherSettings | None = None) -> int | None:
    """`min_validation_period` in units of the searcher's time metric, when it is set in that unit: what
    `simulate(validation_period=...)` takes to validate where real trials do. None: where is not known."""
    length = _length(settings or searcher_settings(config))
    period = validation_period(config)
    return period.value if length is not None and period is not None and period.unit == length.time_metric else None


def _ends(result: SimulationResult, length: TrialLength) -> set[int]:
    """The lengths trials were asked to train to (each `Create` and `Resume`): a trial validates at each."""
    ends = {length.units}
    for _, action in result.actions:
        if isinstance(action, (Create, Resume)) and action.length is not None:
            ends.add(int(action.length))
    return ends


def _validations(rungs: list[int], ends: set[int], every: int | None, unit: str | None) -> str:
    """The preview's line on where its trials validate: none for searchers without rungs, and none with no period
    for those that judge trials only at the end of what they asked for (`ends`)."""
    if not rungs:
        return ""
    if every is not None:
        return f"Trials validate every {every} {unit} (min_validation_period) and at the end of their training."
    if all(r in ends for r in rungs):
        return ""
    return "Trials are assumed to validate at every rung (min_validation_period does not say where they do)."


def _and(values: list[int]) -> str:
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def rung_warnings(rungs: list[int], ends: set[int], period: Length | None, unit: str) -> list[str]:
    """Warnings about the rungs where a trial is judged before the end of its training (`ends`: the lengths it
    is asked to train to, where it always validates) that the validation `period` does not put a validation on.

    A searcher judges a trial at a rung at its first validation at or past the rung; a rung between two
    validations is judged later, on more training than the preview's rung length says."""
    mid = sorted(r for r in set(rungs) if r not in ends)
    if not mid or unit not in LENGTH_UNITS:
        return []
    one = len(mid) == 1
    where = f"{'rung' if one else 'rungs'} at {_and(mid)} {unit}"
    fix = f"set min_validation_period to {math.gcd(*mid)} {unit} (or a divisor of each rung)"
    if period is None:
        return [f"{where} {'needs' if one else 'need'} a validation there, but min_validation_period is not set: "
                f"a trial is judged at its first validation at or past a rung (a PyTorchTrial validates only at "
                f"the end of its training, so none would stop early); this preview assumes one on every rung; {fix}"]
    if period.unit != unit:
        return [f"{where} {'needs' if one else 'need'} a validation there, but min_validation_period is in "
                f"{period.unit}: this preview cannot tell where validations fall and assumes one on every rung; {fix}"]
    missed = [r for r in mid if r % period.value]
    if not missed:
        return []
    judged = sorted({min(judged_at(r, period.value), min((e for e in ends if e >= r), default=r)) for r in missed})
    one = len(missed) == 1
    return [f"{'rung' if one else 'rungs'} at {_and(missed)} {unit} {'falls' if one else 'fall'} between "
            f"validations (every {period.value} {unit}): trials will be judged at {_and(judged)} {unit} instead; "
            f"{fix}"]


def budget(config: Mapping[str, Any]) -> float:
    """The searcher's budget: the units of its time metric that the whole search trains, each trial counted from
    where it starts, in the run `preview` shows (a random metric seeded by the experiment seed; adaptive searchers'
    real runs stop and promote other trials, so for them it is an estimate)."""
    from stalwart.searcher.factory import make_search_method

    base = views.experiment_seed(config) or 0

    def metric_fn(hparams: dict[str, Any], step: float) -> float:
        return random.Random(f"{base}:{json.dumps(hparams, sort_keys=True, default=str)}").random()

    search = make_search_method(config)
    mct = getattr(search.settings or searcher_settings(config), "max_concurrent_trials", None)
    workers = mct if isinstance(mct, int) and mct > 0 else 16
    return simulate(config, metric_fn, max_workers=workers, search=search,
                    validation_period=validation_every(config, search.settings)).units_trained()
