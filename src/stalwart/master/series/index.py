"""In-memory summaries of every trial's metric series, folded incrementally from the metrics table by row id."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import TypedDict

from stalwart.db import Database
from stalwart.master.queries import series as rows_of
from stalwart.master.queries.series import MetricRow
from stalwart.master.series.downsample import SeriesSummary

log = logging.getLogger(__name__)

TERMINAL = ("COMPLETED", "CANCELED", "ERROR")
CHUNK = 50_000


class Validation(TypedDict):
    """A validation value of the searcher metric and the steps it was reported at."""

    value: float
    steps_completed: int


class TrialStats(TypedDict):
    """A trial's progress and searcher metric: best and latest validation (None when unknown)."""

    steps_completed: int
    best_validation: Validation | None
    latest_validation: Validation | None
    validations: int | None  # None: not counted (the SQL fallback)


class ExperimentBest(TypedDict):
    """An experiment's best validation of its searcher metric, and the trial that reported it."""

    value: float
    trial_id: int
    steps_completed: int
    metric: str | None


class IndexState(TypedDict):
    """Whether the index is built, what it holds and what stopped its build (GET /api/v1/ui/status)."""

    ready: bool
    rows_folded: int
    trials: int
    build_seconds: float | None
    memory_bytes: int
    error: str | None


class TrialEntry:
    """One trial in the index: its state, its summaries per group and metric, and how many rows they hold."""

    __slots__ = ("experiment_id", "runs", "state", "groups", "rows", "dirty", "rebuilt_at")

    def __init__(self, experiment_id: int, runs: int, state: str) -> None:
        self.experiment_id = experiment_id
        self.runs = runs
        self.state = state
        self.groups: dict[str, dict[str, SeriesSummary]] = {}
        self.rows = 0  # rows folded so far: a cheap version number for live pages
        self.dirty = False  # a re-run may be overwriting points in place: rebuild from SQL until it ends
        self.rebuilt_at = 0.0


class MetricsIndex:
    """Per (trial, group, metric): a SeriesSummary (count, best, last, min/max per leaf) for fast pages.

    The master is one process, so one index sees every write. Rows are folded in id order: a refresh reads
    only rows with id > the high-water mark (a primary-key range). Upserts that replace points in place
    happen only when a trial re-runs from a checkpoint; such trials are re-read from SQL while they run.
    Built in a background thread at start; until `ready`, callers use their SQL fallbacks.
    """

    def __init__(self, db: Database, leaves: int = 256, max_leaves: int = 2048, min_refresh_s: float = 0.5) -> None:
        self.db = db
        self.leaves = leaves
        # Long, dense series (>= 48 points a leaf) keep up to this many leaves (96 KiB): more than 1,024 used,
        # as fine as the trial chart's 1,000 buckets, so its first drawing reads no rows.
        self.max_leaves = max_leaves
        self.min_refresh_s = min_refresh_s
        self.trials: dict[int, TrialEntry] = {}
        self.by_exp: dict[int, list[int]] = {}
        self.hwm = 0
        self.max_trial_id = 0
        self.ready = False
        self.error: str | None = None
        self.build_seconds: float | None = None
        self.rows_folded = 0
        self._lock = threading.RLock()
        self._last_refresh = 0.0
        self._dirty: set[int] = set()

    # -- building ---------------------------------------------------------------------------
    def start(self) -> threading.Thread:
        """Build the index in a background thread (`ready` once it is built)."""
        th = threading.Thread(target=self._build_safely, name="metrics-index", daemon=True)
        th.start()
        return th

    def _build_safely(self) -> None:
        """build(), its error kept in `error` and logged (the index then stays not ready)."""
        try:
            self.build()
        except Exception as err:  # noqa: BLE001 - a stopped master disposes the engine under us
            self.error = str(err)
            log.warning("metrics index build stopped: %s", err)

    def build(self) -> None:
        """Load every trial and fold every metrics row, a chunk at a time; then the index is `ready`."""
        t0 = time.monotonic()
        with self._lock:
            self._load_trials()
        while True:
            with self._lock:
                left = self._fold_chunk()
            if not left:
                break
            time.sleep(0)  # let the event loop have the GIL between chunks
        with self._lock:
            self.ready = True
        self.build_seconds = time.monotonic() - t0
        log.info("metrics index: %d rows of %d trials in %.1f s", self.rows_folded, len(self.trials),
                 self.build_seconds)

    def _load_trials(self, only_new: bool = False) -> None:
        """Add every trial (or only those created since the last load) to the index."""
        with self.db.begin() as conn:
            for tid, exp_id, runs, state in rows_of.trials_after(conn, self.max_trial_id if only_new else None):
                self._add_trial(tid, exp_id, runs, state)

    def _add_trial(self, tid: int, exp_id: int, runs: int, state: str) -> TrialEntry:
        """The trial's entry, made (empty) when the index has none yet."""
        entry = self.trials.get(tid)
        if entry is None:
            entry = self.trials[tid] = TrialEntry(exp_id, runs, state)
            self.by_exp.setdefault(exp_id, []).append(tid)
            self.max_trial_id = max(self.max_trial_id, tid)
        return entry

    def _fold_chunk(self) -> int:
        """Fold the metrics rows with ids in (hwm, hwm + CHUNK]; returns how many ids are left after them."""
        with self.db.begin() as conn:
            top = rows_of.top_metrics_id(conn)
            if top <= self.hwm:
                return 0
            upto = min(top, self.hwm + CHUNK)
            rows = rows_of.numbers_between(conn, self.hwm, upto)
        if any(r[1] not in self.trials for r in rows):
            self._load_trials(only_new=True)
        self._fold(rows)
        self.hwm = upto
        return top - upto

    def _fold(self, rows: Iterable[MetricRow]) -> None:
        """Add (id, trial, group, steps, time, name, value) rows to the summaries, one batch per series."""
        batches: dict[tuple[int, str, str], tuple[list[float], list[float], list[float]]] = {}
        last_id = None
        for rid, tid, group, steps, rtime, name, value in rows:
            b = batches.get((tid, group, name))
            if b is None:
                b = batches[(tid, group, name)] = ([], [], [])
            b[0].append(steps)
            b[1].append(float(value))
            b[2].append(rtime)
            if rid != last_id:
                last_id = rid
                self.rows_folded += 1
        for (tid, group, name), (xs, ys, ts) in batches.items():
            entry = self.trials.get(tid)
            if entry is None:
                continue
            series = entry.groups.setdefault(group, {})
            s = series.get(name)
            if s is None:
                s = series[name] = SeriesSummary(self.leaves, self.max_leaves)
            s.extend(xs, ys, ts)
            entry.rows += len(xs)

    def _rebuild_trial(self, tid: int, entry: TrialEntry) -> None:
        """Re-read one trial's summaries from its rows (a re-run may have replaced points in place)."""
        with self.db.begin() as conn:
            rows = rows_of.numbers_of_trial(conn, tid, self.hwm)
        rows_before = entry.rows
        entry.groups = {}
        entry.rows = 0
        self._fold(rows)
        entry.rows = max(entry.rows, rows_before + 1)  # always a new version
        entry.rebuilt_at = time.monotonic()

    # -- keeping up ---------------------------------------------------------------------------
    def refresh(self, force: bool = False) -> None:
        """Fold new rows and re-read trials that re-run; cheap when nothing changed."""
        if not self.ready:
            return
        now = time.monotonic()
        if not force and now - self._last_refresh < self.min_refresh_s:
            return
        if not self._lock.acquire(blocking=False):
            return  # a reader thread holds it: catch up next time rather than block the event loop
        try:
            self._last_refresh = now
            self._load_trials(only_new=True)
            self._sync_live_trials()
            while self._fold_chunk():
                pass
            for tid in list(self._dirty):
                entry = self.trials[tid]
                if now - entry.rebuilt_at >= 1.0 or entry.state in TERMINAL:
                    self._rebuild_trial(tid, entry)
                    if entry.state in TERMINAL:
                        entry.dirty = False
                        self._dirty.discard(tid)
        finally:
            self._lock.release()

    def reading(self) -> threading.RLock:
        """Hold this while reading summaries off the event loop (refresh skips while it is held)."""
        return self._lock

    def _sync_live_trials(self) -> None:
        """Read the runs and state of the trials not ended; a trial that re-runs is marked dirty."""
        live = [tid for tid, e in self.trials.items() if e.state not in TERMINAL]
        if not live:
            return
        with self.db.begin() as conn:
            rows = rows_of.runs_and_states(conn, live)
        for tid, runs, state in rows:
            e = self.trials[tid]
            if runs > 1 and runs != e.runs:
                e.dirty = True
                self._dirty.add(tid)
            e.runs, e.state = runs, state

    # -- reading ------------------------------------------------------------------------------
    def summary(self, trial_id: int, group: str, metric: str) -> SeriesSummary | None:
        """The summary of one series, or None when the index has none."""
        e = self.trials.get(trial_id)
        return e.groups.get(group, {}).get(metric) if e else None

    def chart_summary(self, trial_id: int, group: str, metric: str) -> SeriesSummary | None:
        """The summary when it may stand in for the rows: None while the trial re-runs over its old points."""
        e = self.trials.get(trial_id)
        if e is None or e.dirty:
            return None
        return e.groups.get(group, {}).get(metric)

    def trial_ids(self, experiment_id: int) -> list[int]:
        """The ids of an experiment's trials the index holds."""
        return list(self.by_exp.get(experiment_id, ()))

    def version(self, trial_ids: Iterable[int]) -> int:
        """The rows folded for these trials: changes whenever any of their points does."""
        return sum(self.trials[tid].rows for tid in trial_ids if tid in self.trials)

    def names(self, trial_ids: Iterable[int], group: str | None = None) -> dict[str, list[str]]:
        """{group: sorted metric names} over the given trials (one group when `group` is given)."""
        out: dict[str, set[str]] = {}
        for tid in trial_ids:
            e = self.trials.get(tid)
            if e is None:
                continue
            for g, series in e.groups.items():
                if group is None or g == group:
                    out.setdefault(g, set()).update(series)
        return {g: sorted(v) for g, v in sorted(out.items())}

    def trial_stats(self, trial_id: int, metric: str | None, smaller_is_better: bool) -> TrialStats:
        """steps_completed, best and latest validation of `metric` for one trial (None when unknown)."""
        e = self.trials.get(trial_id)
        out: TrialStats = {"steps_completed": 0, "best_validation": None, "latest_validation": None, "validations": 0}
        if e is None:
            return out
        for series in e.groups.values():
            for summary in series.values():
                if summary.last_x is not None:
                    out["steps_completed"] = max(out["steps_completed"], int(summary.last_x))
        s = e.groups.get("validation", {}).get(metric) if metric else None
        best = s.best(smaller_is_better) if s is not None else None  # None also when the series is empty
        if s is not None and best is not None and s.last_x is not None and s.last_y is not None:
            value, x = best
            out["best_validation"] = {"value": value, "steps_completed": int(x)}
            out["latest_validation"] = {"value": s.last_y, "steps_completed": int(s.last_x)}
            out["validations"] = s.n
        return out

    def experiment_best(self, experiment_id: int, metric: str | None, smaller_is_better: bool
                        ) -> ExperimentBest | None:
        """The best validation of `metric` over the experiment's trials (None when none has one)."""
        best: ExperimentBest | None = None
        for tid in self.by_exp.get(experiment_id, ()):
            s = self.summary(tid, "validation", metric) if metric else None
            found = s.best(smaller_is_better) if s is not None else None  # None also when the series is empty
            if found is None:
                continue
            value, x = found
            if best is None or (value < best["value"] if smaller_is_better else value > best["value"]):
                best = {"value": value, "trial_id": tid, "steps_completed": int(x), "metric": metric}
        return best

    def status(self) -> IndexState:
        """The index's state, for GET /api/v1/ui/status (api.models.ui.IndexStatus)."""
        with self._lock:
            nbytes = sum(s.nbytes() for e in self.trials.values() for g in e.groups.values() for s in g.values())
        return {"ready": self.ready, "rows_folded": self.rows_folded, "trials": len(self.trials),
                "build_seconds": self.build_seconds, "memory_bytes": nbytes, "error": self.error}
