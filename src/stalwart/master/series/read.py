"""What the handlers of routes/series.py call: the metrics index caught up, the answer from the cache while
the data it reads is unchanged, else computed in the threadpool (off the event loop) and cached."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import State

from stalwart.master.series.cache import cache_of
from stalwart.master.series.experiment import ExperimentQuery, experiment_series as read_experiment
from stalwart.master.series.index import MetricsIndex
from stalwart.master.series.trial import TrialQuery, trial_series as read_trial
from stalwart.master.service import Master


def index_of(state: State) -> MetricsIndex | None:
    """The app's metrics index (app.state.metrics_index; the UI installs it), or None."""
    idx: MetricsIndex | None = getattr(state, "metrics_index", None)
    return idx


async def trial_series(state: State, m: Master, q: TrialQuery) -> bytes:
    """One trial's series as JSON (series/trial.py)."""
    idx = index_of(state)
    if idx is not None:
        idx.refresh()
    ready = idx if idx is not None and idx.ready else None
    key = None if ready is None else (q, ready.version([q.trial_id]))  # the version: rows of the trial folded
    cache = cache_of(state)
    return cache.get(key) or cache.put(key, await run_in_threadpool(read_trial, m, q, ready))


async def experiment_series(state: State, m: Master, q: ExperimentQuery) -> bytes:
    """An experiment's trials on one x grid, as JSON or float32 binary (series/experiment.py)."""
    idx = index_of(state)
    if idx is not None:
        idx.refresh()
    key = None
    if idx is not None and idx.ready:
        in_exp = idx.trial_ids(q.exp_id)
        key = (q, idx.version(in_exp if q.trial_ids is None else q.trial_ids), len(in_exp))
    cache = cache_of(state)
    return cache.get(key) or cache.put(key, await run_in_threadpool(read_experiment, m, idx, q))
