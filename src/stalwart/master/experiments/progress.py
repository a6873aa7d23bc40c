"""An experiment's progress: the one definition that the API, the CLI, the SDK and the UI all show (they read the
experiments table's `progress`, which only this module computes; docs/searchers.md, "Progress").

progress = the units of the searcher's time metric trained by all the experiment's trials / the searcher's budget.

* A trial's units trained: its reported progress (a fraction of the length it trains to) times that length, less
  what it started with when it was forked from another trial's checkpoint (PBT), so no unit counts twice.
* The budget: what the whole search trains in the simulation `preview-search` shows (`searcher.simulate.budget`):
  for single, random and grid the sum of their trials' lengths; for adaptive searchers (ASHA, Hyperband, PBT) an
  estimate, since a real run stops and promotes other trials than the simulation does.
* A COMPLETED experiment is at 1: the searcher finished its work (ASHA stopping weak trials early is that work).
  Every other state shows the share actually trained, capped at 1: an experiment killed, canceled or failed keeps
  the progress it reached.
* A custom searcher's budget is unknown to the master: its own `progress()` figure is used while it runs, and an
  experiment ended early keeps the last figure it had.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import Any

from stalwart.api.states import ExperimentState as S
from stalwart.config import searcher_settings, views
from stalwart.master.queries import checkpoints as checkpoint_rows, trials as trial_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.searcher import SearchMethod
from stalwart.searcher.simulate import budget as simulated_budget

log = logging.getLogger(__name__)

DEFAULT_LENGTH = 100
"""The length of a trial whose searcher sets none (progress is then a fraction of it), as `simulate` assumes."""


def of_experiment(conn: Conn, exp: Row | Mapping[str, Any], search: SearchMethod | None = None) -> float:
    """The experiment's progress in 0..1 as defined above (`search`: its searcher as it is now, when it runs)."""
    state = S(exp["state"])
    if state is S.COMPLETED:
        return 1.0
    trials = trial_rows.progress_of_experiment(conn, exp["id"])
    total = budget(exp["config"])
    if total is None:
        if search is None or state.terminal or (state.stopping and state is not S.STOPPING_COMPLETED):
            return float(exp["progress"] or 0.0)
        per_trial = {r["request_id"]: (1.0 if r["state"] == S.COMPLETED.value else r["progress"]) for r in trials}
        return _clamp(search.progress(per_trial))
    return _clamp(trained(conn, exp["config"], trials) / total) if total > 0 else 0.0


def trained(conn: Conn, config: Mapping[str, Any], trials: list[Row]) -> float:
    """The units of the time metric the trials trained, each counted from where it started."""
    starts = _fork_starts(conn, config, trials)
    return sum(max(0.0, _clamp(r["progress"]) * (r["target_length"] or DEFAULT_LENGTH) - starts.get(r["id"], 0.0))
               for r in trials)


def budget(config: Mapping[str, Any]) -> float | None:
    """The searcher's budget in units of its time metric; None for a custom searcher (or one the simulation cannot
    run). Computed once per config."""
    if config.get("searcher", {}).get("name") == "custom":
        return None
    return _budget(json.dumps(config, sort_keys=True, default=str))


@functools.lru_cache(maxsize=256)
def _budget(config_json: str) -> float | None:
    try:
        return simulated_budget(json.loads(config_json))
    except Exception:  # noqa: BLE001 - an unknown budget falls back to the searcher's own figure
        log.warning("the searcher's budget could not be simulated; progress uses the searcher's figure", exc_info=True)
        return None


def _fork_starts(conn: Conn, config: Mapping[str, Any], trials: list[Row]) -> dict[int, float]:
    """Trial id → the units a trial forked from another trial's checkpoint started with: that trial's latest
    checkpoint when the fork was made."""
    forks = [r for r in trials if r["source_request_id"]]
    if not forks:
        return {}
    by_request = {r["request_id"]: r["id"] for r in trials}
    checkpoints = checkpoint_rows.steps_of_trials(conn, list(by_request.values()))
    per_batch = _units_per_batch(config)
    out: dict[int, float] = {}
    for fork in forks:
        source = by_request.get(fork["source_request_id"])
        steps = [c["steps_completed"] for c in checkpoints
                 if c["trial_id"] == source and c["report_time"] <= fork["created_at"]]
        out[fork["id"]] = max(steps, default=0) * per_batch
    return out


def _units_per_batch(config: Mapping[str, Any]) -> float:
    """How many units of the searcher's time metric one batch is (checkpoints count batches)."""
    settings = searcher_settings(config)
    length = getattr(settings, "length", None)
    unit = getattr(length, "time_metric", None) or getattr(settings, "time_metric", None) or "batches"
    batch_size = views.global_batch_size(config)
    if unit == "records" and batch_size:
        return float(batch_size)
    if unit == "epochs" and batch_size and views.records_per_epoch(config):
        return batch_size / views.records_per_epoch(config)
    return 1.0


def _clamp(value: float | None) -> float:
    return max(0.0, min(1.0, float(value or 0.0)))
