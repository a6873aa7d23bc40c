"""Run a searcher against a synthetic objective with simulated workers, and preview a search.

`simulate(config, metric_fn, max_workers=W)` plays the master's part with W workers and a
simulated clock (no real time passes):

* `metric_fn(hparams, step)` gives the searcher metric of a trial with these hyperparameters after
  `step` units of the time metric; it may return `(metric, elapsed)` where `elapsed` is the
  simulated time that training to `step` takes from scratch (default: `step`). Raising
  `SimulatedExit(TrialExit.X)` ends the trial that way at that point.
* A trial trains from its current step toward its `length` (`Create.length`, else the config's
  max_time/max_length, else `default_length`) and validates at every milestone of the searcher
  (rung lengths, round ends), every `validate_every` units if given, and at its length. A
  validation reports `{metric: value, time_metric: step}` (plus `batches` when that is the time
  metric). A trial that reaches its length and is neither paused nor stopped exits COMPLETED.
* `Stop` ends a running trial at once (COMPLETED is reported); a paused or queued one is closed.
  `Pause` frees the worker (no exit is reported); `Resume` re-queues the trial (a `Pause` and a
  `Resume` in one batch just let it keep its worker). `Create(checkpoint_from=R)` starts at R's
  latest checkpoint step (the step of R's last validation).
* Trials wait in a FIFO queue for a free worker. The run ends at `Shutdown`, when nothing can
  happen any more, or at `time_limit`.

`preview(config)` runs `simulate` with a random (seeded) metric and summarises how many trials
train to which length: the equivalent of `det preview-search`.
"""

from __future__ import annotations

import heapq
import json
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stalwart.config import SearcherSettings, TrialLength, searcher_settings, views
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

    def lengths(self) -> dict[int, int]:
        """How many trials trained to each final step."""
        out: dict[int, int] = {}
        for trial in self.trials.values():
            key = int(round(trial.step))
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items()))


def _call_metric(metric_fn: Callable[..., Any], hparams: dict[str, Any], step: float) -> tuple[float, float]:
    value = metric_fn(hparams, step)
    if isinstance(value, tuple):
        return float(value[0]), float(value[1])
    return float(value), float(step)


def simulate(config: Mapping[str, Any], metric_fn: Callable[[dict[str, Any], float], Any], *, max_workers: int,
             validate_every: int | None = None, time_limit: float | None = None,
             default_length: int = 100, search: SearchMethod | None = None,
             max_events: int = 10_000_000) -> SimulationResult:
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
                    trial.step = trial.checkpoint_step = parent.checkpoint_step
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

    def text(self) -> str:
        lines = [f"Searcher: {self.searcher}",
                 f"This search will create a total of {self.total_trials} trial(s).", ""]
        width = max([len("Trials")] + [len(str(n)) for n, _ in self.rows])
        lines.append(f"{'Trials':>{width}} | Training length ({self.unit})")
        lines.append("-" * (width + 1) + "+" + "-" * 24)
        for n, length in self.rows:
            lines.append(f"{n:>{width}} | {length}")
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
    """Simulate the search with a random metric (seeded by `seed` or the experiment seed)."""
    from stalwart.searcher.factory import make_search_method

    base = seed if seed is not None else (views.experiment_seed(config) or 0)

    def metric_fn(hparams: dict[str, Any], step: float) -> float:
        rng = random.Random(f"{base}:{json.dumps(hparams, sort_keys=True, default=str)}")
        return rng.random() + 0.0 * step

    search = make_search_method(config)
    settings = search.settings or searcher_settings(config)
    mct = getattr(settings, "max_concurrent_trials", None)
    workers = max_workers or (mct if isinstance(mct, int) and mct > 0 else 16)
    result = simulate(config, metric_fn, max_workers=workers, search=search)
    length = _length(settings)
    unit = length.time_metric if length else None
    rows = [(n, length) for length, n in result.lengths().items()]
    brackets = []
    describe = getattr(search, "describe", None)
    owner = getattr(search, "owner", None)
    if callable(describe) and isinstance(owner, dict):
        for index, info in enumerate(describe()):
            mine = [t for rid, t in result.trials.items() if owner.get(rid) == index]
            rungs = [{"length": length, "trials": sum(1 for t in mine if t.step >= length - 1e-9)}
                     for length in info["rung_lengths"]]
            brackets.append({"rungs": rungs, "max_trials": info["max_trials"]})
    return Preview(settings.name, len(result.trials), unit or "units", rows, brackets)
