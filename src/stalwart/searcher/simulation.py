"""Run a searcher against a synthetic objective with simulated workers and a simulated clock.

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

`Simulation` holds one run's state; its steps are its methods. `stalwart.searcher.simulate` builds the
preview of a search (`det preview-search`) on it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stalwart.config import SearcherSettings, TrialLength, searcher_settings
from stalwart.searcher.base import Action, Create, Pause, Resume, SearchMethod, Shutdown, Stop, TrialExit

MetricFn = Callable[[dict[str, Any], float], Any]
"""`metric_fn(hparams, step)`: the metric, or `(metric, elapsed)` (see the module docstring)."""


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


def trial_length(settings: SearcherSettings) -> TrialLength | None:
    """The trial length of searchers that have one (pbt has a length per round instead)."""
    length = getattr(settings, "length", None)
    return length if isinstance(length, TrialLength) else None


def _call_metric(metric_fn: MetricFn, hparams: dict[str, Any], step: float) -> tuple[float, float]:
    value = metric_fn(hparams, step)
    if isinstance(value, tuple):
        return float(value[0]), float(value[1])
    return float(value), float(step)


def simulate(config: Mapping[str, Any], metric_fn: MetricFn, *, max_workers: int,
             validate_every: int | None = None, time_limit: float | None = None,
             default_length: int = 100, search: SearchMethod | None = None,
             max_events: int = 10_000_000, validation_period: int | None = None) -> SimulationResult:
    """Drive a searcher with `max_workers` simulated workers; see the module docstring."""
    from stalwart.searcher.factory import make_search_method

    if max_workers < 1:
        raise ValueError("max_workers must be >= 1")
    search = make_search_method(config) if search is None else search
    settings = search.settings or searcher_settings(config)  # a benchmark's peer searcher has none of its own
    run = Simulation(search, settings, metric_fn, max_workers=max_workers, validate_every=validate_every,
                     default_length=default_length, validation_period=validation_period)
    return run.run(time_limit, max_events)


class Simulation:
    """One simulated run: the searcher, the trials, the workers' queue and the clock."""

    def __init__(self, search: SearchMethod, settings: SearcherSettings, metric_fn: MetricFn, *, max_workers: int,
                 validate_every: int | None, default_length: int, validation_period: int | None) -> None:
        length = trial_length(settings)
        reader = getattr(search, "reader", None)  # e.g. pbt's time metric is its own field
        self.search = search
        self.metric_fn = metric_fn
        self.max_workers = max_workers
        self.validate_every = validate_every
        self.time_metric: str = (getattr(reader, "time_metric", None) or (length.time_metric if length else None)
                                 or "batches")
        self.metric_name = settings.metric
        self.smaller = settings.smaller_is_better
        self.fallback_length = length.units if length else default_length
        self.milestones = sorted(set(search.milestones()))
        if validation_period:
            self.milestones = sorted({judged_at(m, validation_period) for m in self.milestones})
        self.trials: dict[str, SimTrial] = {}
        self.queue: list[str] = []
        self.running: set[str] = set()
        self.heap: list[tuple[float, int, str, float]] = []  # (time, seq, rid, step) of the next validation
        self.seq = 0
        self.now = 0.0
        self.log: list[tuple[float, Action]] = []
        self.best_trace: list[tuple[float, float]] = []
        self.shutdown: Shutdown | None = None
        self.pending_exits: list[tuple[str, TrialExit]] = []
        self.worker_time = 0.0
        self.curve_cache: dict[tuple[str, float], tuple[float, float]] = {}

    # -- the run ------------------------------------------------------------------------------------

    def run(self, time_limit: float | None, max_events: int) -> SimulationResult:
        """Play the search out: exits reach the searcher, free workers take queued trials, then the next validation
        happens; until `Shutdown`, nothing left to happen, `time_limit` or `max_events` validations."""
        self.apply(self.search.initial_operations())
        events = 0
        while self.shutdown is None and events < max_events:
            self.drain_exits()
            if self.shutdown is not None:
                break
            self.start_workers()
            if self.pending_exits:
                continue
            if not self.heap:
                break
            time, _, rid, step = heapq.heappop(self.heap)
            if time_limit is not None and time > time_limit:
                self.now = time_limit
                break
            trial = self.trials[rid]
            if trial.status != "running" or rid not in self.running:
                continue
            self.now = time
            events += 1
            self.validate(trial, step)
        return SimulationResult(self.trials, self.log, self.now, self.best_trace, self.shutdown, self.smaller,
                                self.worker_time)

    def drain_exits(self) -> None:
        """Tell the searcher of the trials that exited, one at a time, until it shuts the search down."""
        while self.pending_exits and self.shutdown is None:
            rid, how = self.pending_exits.pop(0)
            self.apply(self.search.on_trial_exited(rid, how))

    def start_workers(self) -> None:
        """Free workers take the queued trials, first queued first."""
        while self.queue and len(self.running) < self.max_workers:
            rid = self.queue.pop(0)
            trial = self.trials[rid]
            if trial.status != "queued":
                continue
            trial.status = "running"
            self.running.add(rid)
            self.schedule(trial)

    def validate(self, trial: SimTrial, step: float) -> None:
        """`trial` reaches `step` and validates there: the searcher hears of it; the trial then ends or goes on."""
        rid = trial.request_id
        trial.step = step
        try:
            value, _ = self.curve(trial, step)
        except SimulatedExit as exit_:
            self.end_trial(trial, exit_.how, report=True)
            return
        trial.checkpoint_step = step
        trial.validations.append((self.now, step, value))
        best = self.best_trace
        if not best or ((value < best[-1][1]) if self.smaller else (value > best[-1][1])):
            best.append((self.now, value))
        metrics = {self.metric_name: value, self.time_metric: step}
        if self.time_metric != "batches":
            metrics.setdefault("batches", step)
        self.apply(self.search.on_validation_completed(rid, metrics, int(step)))
        if trial.status == "running" and rid in self.running:
            if trial.step >= trial.target - 1e-9:
                self.end_trial(trial, TrialExit.COMPLETED, report=True)
            elif not self.scheduled(rid):
                self.schedule(trial)

    # -- a trial's training -------------------------------------------------------------------------

    def curve(self, trial: SimTrial, step: float) -> tuple[float, float]:
        """The trial's (metric, elapsed time from scratch) at `step`, asked of `metric_fn` once."""
        key = (trial.request_id, step)
        if key not in self.curve_cache:
            if step <= 0:
                self.curve_cache[key] = (math.nan, 0.0)
            else:
                self.curve_cache[key] = _call_metric(self.metric_fn, trial.hparams, step)
        return self.curve_cache[key]

    def next_stop(self, trial: SimTrial) -> float:
        """The step of the trial's next validation: a milestone, a `validate_every` multiple, or its target."""
        candidates = [m for m in self.milestones if m > trial.step + 1e-9 and m < trial.target]
        if self.validate_every:
            candidates.append((math.floor(trial.step / self.validate_every + 1e-9) + 1) * self.validate_every)
        candidates.append(trial.target)
        return float(min(c for c in candidates if c > trial.step + 1e-9) if any(
            c > trial.step + 1e-9 for c in candidates) else trial.target)

    def schedule(self, trial: SimTrial) -> None:
        """Put the running trial's next validation on the clock (or end it at once if its metric_fn says so)."""
        step = self.next_stop(trial)
        try:
            _, t_to = self.curve(trial, step)
            _, t_from = self.curve(trial, trial.step)
        except SimulatedExit as exit_:
            self.end_trial(trial, exit_.how, report=True)  # it fails right away, using its worker for no time
            return
        duration = max(t_to - t_from, 0.0)
        self.worker_time += duration
        trial.busy_time += duration
        self.seq += 1
        heapq.heappush(self.heap, (self.now + duration, self.seq, trial.request_id, step))

    def scheduled(self, rid: str) -> bool:
        """Whether the trial has a validation on the clock."""
        return any(e[2] == rid for e in self.heap)

    def end_trial(self, trial: SimTrial, how: TrialExit, report: bool) -> None:
        """The trial is done; with `report`, the searcher hears of its exit."""
        trial.status = "done"
        trial.exit = how
        trial.ended_at = self.now
        self.running.discard(trial.request_id)
        if report:
            self.pending_exits.append((trial.request_id, how))

    # -- the searcher's actions ---------------------------------------------------------------------

    def apply(self, actions: list[Action]) -> None:
        """Carry out one batch of the searcher's actions (its pauses last, so a Resume in the batch undoes one)."""
        pausing: list[str] = []
        for action in actions:
            self.log.append((self.now, action))
            if isinstance(action, Create):
                self.create(action)
            elif isinstance(action, Stop):
                self.stop(action, pausing)
            elif isinstance(action, Pause):
                trial = self.trials.get(action.request_id)
                if trial is not None and trial.status in ("running", "queued"):
                    pausing.append(trial.request_id)
            elif isinstance(action, Resume):
                self.resume(action, pausing)
            elif isinstance(action, Shutdown):
                self.shutdown = action
        self.pause(pausing)

    def create(self, action: Create) -> None:
        """A new trial joins the queue (at its parent's checkpoint step when it has one)."""
        parent = self.trials.get(action.checkpoint_from) if action.checkpoint_from else None
        length = action.length if action.length is not None else self.fallback_length
        trial = SimTrial(action.request_id, action.hparams, action.seed, self.now, int(length),
                         parent=action.checkpoint_from)
        if parent is not None:
            trial.start = trial.step = trial.checkpoint_step = parent.checkpoint_step
        self.trials[action.request_id] = trial
        self.queue.append(action.request_id)

    def stop(self, action: Stop, pausing: list[str]) -> None:
        """A running or queued trial ends COMPLETED (reported); a paused one is closed without a report."""
        trial = self.trials.get(action.request_id)
        if trial is None or trial.status == "done":
            return
        if trial.request_id in pausing:
            pausing.remove(trial.request_id)
        if trial.status == "paused":
            self.end_trial(trial, TrialExit.COMPLETED, report=False)
        else:
            self.end_trial(trial, TrialExit.COMPLETED, report=True)

    def resume(self, action: Resume, pausing: list[str]) -> None:
        """A paused trial is queued again toward its new length; one paused in this batch keeps its worker."""
        trial = self.trials.get(action.request_id)
        if trial is None or trial.status == "done":
            return
        trial.target = int(action.length)
        if trial.request_id in pausing:
            pausing.remove(trial.request_id)  # keeps its worker and goes on
            if trial.status == "running" and not self.scheduled(trial.request_id):
                self.schedule(trial)
        elif trial.status == "paused":
            trial.status = "queued"
            self.queue.append(trial.request_id)

    def pause(self, pausing: list[str]) -> None:
        """The trials paused in a batch free their workers or leave the queue."""
        for rid in pausing:
            trial = self.trials[rid]
            if trial.status == "running":
                self.running.discard(rid)
            if trial.status in ("running", "queued"):
                trial.status = "paused"
                if rid in self.queue:
                    self.queue.remove(rid)
