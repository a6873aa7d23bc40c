"""B3 part 2 for bench/search.py: the searchers' own cost (10,000 trials through ask/tell) against Optuna's
in-memory storage."""

from __future__ import annotations

import json
import math
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from lcbench import EPOCHS, HPARAMS, base_config
from stalwart.searcher import Create, SearchMethod, Shutdown, Stop, TrialExit, make_search_method


def fmt(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.{digits}f}"



def _drive_ours(kind: str, n: int) -> tuple[SearchMethod, int, bool, dict]:
    searcher = {"name": "random", "max_trials": n, "max_concurrent_trials": 16, "max_length": {"epochs": EPOCHS}}
    if kind == "asha":
        searcher = {"name": "adaptive_asha", "max_trials": n, "max_concurrent_trials": 16,
                    "max_time": EPOCHS, "time_metric": "epochs"}
    cfg = base_config(1, searcher)
    search = make_search_method(cfg)
    rng = np.random.default_rng(0)
    decisions = 0
    live = [a for a in search.initial_operations() if isinstance(a, Create)]
    rungs = sorted(set(search.milestones())) or [EPOCHS]
    done = False
    while live and not done:
        rid = live.pop(0).request_id
        for epoch in rungs:
            out = search.on_validation_completed(rid, {"val_accuracy": float(rng.random()), "epochs": epoch}, epoch)
            decisions += 1
            live += [a for a in out if isinstance(a, Create)]
            if any(isinstance(a, Stop) and a.request_id == rid for a in out):
                break
        out = search.on_trial_exited(rid, TrialExit.COMPLETED)
        decisions += 1
        live += [a for a in out if isinstance(a, Create)]
        done = any(isinstance(a, Shutdown) for a in out)
    return search, decisions, done, cfg


def _peak_mib(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def cost_ours(kind: str, n: int) -> dict:
    t0 = time.perf_counter()
    search, decisions, done, cfg = _drive_ours(kind, n)
    elapsed = time.perf_counter() - t0
    peak = _peak_mib(lambda: _drive_ours(kind, n))
    t1 = time.perf_counter()
    snap = json.dumps(search.snapshot())
    t_snap = time.perf_counter() - t1
    t2 = time.perf_counter()
    fresh = make_search_method(cfg)
    fresh.restore(json.loads(snap))
    t_restore = time.perf_counter() - t2
    return {"what": f"stalwart {kind} (create/validate/exit)", "trials": n, "decisions": decisions,
            "total_s": elapsed, "us_per_decision": elapsed / decisions * 1e6, "peak_mib": peak,
            "snapshot_kib": len(snap) / 1024, "snapshot_ms": t_snap * 1e3, "restore_ms": t_restore * 1e3,
            "finished": done}


def _drive_optuna(sampler: str, n: int) -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    d = optuna.distributions
    dists = {k: d.FloatDistribution(0.0, 1.0) for k in HPARAMS}
    smp = optuna.samplers.RandomSampler(seed=0) if sampler == "random" else optuna.samplers.TPESampler(seed=0)
    study = optuna.create_study(direction="maximize", sampler=smp)
    for _ in range(n):
        trial = study.ask(dists)
        trial.report(0.5, EPOCHS)
        study.tell(trial, float(sum(trial.params.values())))


def cost_optuna(sampler: str, n: int, memory: bool = True) -> dict:
    t0 = time.perf_counter()
    _drive_optuna(sampler, n)
    elapsed = time.perf_counter() - t0
    peak = _peak_mib(lambda: _drive_optuna(sampler, n)) if memory else math.nan
    decisions = 3 * n  # ask, report, tell
    return {"what": f"optuna {sampler} in-memory (ask/report/tell)", "trials": n, "decisions": decisions,
            "total_s": elapsed, "us_per_decision": elapsed / decisions * 1e6, "peak_mib": peak,
            "snapshot_kib": math.nan, "snapshot_ms": math.nan, "restore_ms": math.nan, "finished": True}


def cost_report(rows: list[dict]) -> list[str]:
    lines = [f"{'what':<44} {'trials':>7} {'decisions':>9} {'total s':>8} {'us/decision':>11} "
             f"{'peak MiB':>9} {'snapshot KiB':>12} {'snap ms':>8} {'restore ms':>10}"]
    for r in rows:
        lines.append(f"{r['what']:<44} {r['trials']:>7} {r['decisions']:>9} {r['total_s']:>8.2f} "
                     f"{r['us_per_decision']:>11.1f} {fmt(r['peak_mib'], 2):>9} {fmt(r['snapshot_kib'], 0):>12} "
                     f"{fmt(r['snapshot_ms'], 1):>8} {fmt(r['restore_ms'], 1):>10}")
    return lines
