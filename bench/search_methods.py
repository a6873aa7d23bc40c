"""B3's methods (bench/search.py): our searchers' configs and the peers, and one (task, seed, W) cell's runs of them
through `stalwart.searcher.simulate` on the LCBench surrogate."""

from __future__ import annotations

import time

from lcbench import EPOCHS, OptunaPeer, RayAshaPeer, Surrogate, base_config
from stalwart.searcher import make_search_method, simulate

# our early-stopping variants: searcher name and the settings on top of `max_trials`, `max_concurrent_trials`
# and the 52-epoch `max_time`
ASHA_VARIANTS = {
    "asha": ("adaptive_asha", {}),
    "asha-aggr": ("adaptive_asha", {"mode": "aggressive"}),
    "asha-promo": ("asha_promotion", {"mode": "aggressive"}),
    "asha-tpe": ("adaptive_asha", {"mode": "standard", "sampler": "tpe"}),
    "asha-aggr-tpe": ("adaptive_asha", {"mode": "aggressive", "sampler": "tpe"}),
    "asha-evo": ("adaptive_asha", {"mode": "standard", "sampler": "evolution"}),
    "asha-aggr-evo": ("adaptive_asha", {"mode": "aggressive", "sampler": "evolution"}),
    "asha-aggr-evo-d2": ("adaptive_asha", {"mode": "aggressive", "sampler": "evolution", "divisor": 2}),
}


def method_config(name: str, seed: int, workers: int, budget_full: int) -> dict:
    time_ = {"max_time": EPOCHS, "time_metric": "epochs"}
    big = 100_000
    if name == "random":
        return base_config(seed, {"name": "random", "max_trials": big, "max_concurrent_trials": workers,
                                  "max_length": {"epochs": EPOCHS}})
    if name in ASHA_VARIANTS:
        searcher, settings = ASHA_VARIANTS[name]
        return base_config(seed, {"name": searcher, **settings, "max_trials": big, "max_concurrent_trials": workers,
                                  **time_})
    if name == "hyperband":
        # one Hyperband iteration (eta 3, 4 brackets) plans 657 epochs for 49 trials: scale to the budget
        trials = max(49, round(49 * budget_full * EPOCHS / 657))
        return base_config(seed, {"name": "hyperband", "divisor": 3, "max_trials": trials,
                                  "max_concurrent_trials": workers, **time_})
    if name == "pbt":
        return base_config(seed, {"name": "pbt", "population_size": max(2 * workers, min(budget_full, 64)),
                                  "num_rounds": 13, "length_per_round": 4, "time_metric": "epochs"})
    raise ValueError(name)


OUR_ASHAS = list(ASHA_VARIANTS)
# `sampler: evolution`'s rule (stalwart.searcher.evolution_sampler) as of this script; --json records it. In a
# --merge, a file of an earlier rule (files without the field: rule 1) has its evolution methods' runs reported
# as '<method>-rule<N>': they still count towards the marks, next to the current rule's runs.
EVOLUTION_RULE = 2
EVOLUTION_METHODS = [m for m, (_, settings) in ASHA_VARIANTS.items() if settings.get("sampler") == "evolution"]
OURS = ["random", *OUR_ASHAS, "hyperband", "pbt"]
PEERS = ["optuna-tpe", "optuna-sha", "optuna-sha3", "optuna-sha3-rf2", "optuna-hb", "ray-asha", "ray-asha3",
         "ray-asha3-rf2"]
PRUNING_PEERS = ["ray-asha", "ray-asha3", "ray-asha3-rf2", "optuna-sha", "optuna-sha3", "optuna-sha3-rf2", "optuna-hb"]
METHODS = OURS + PEERS


def run_method(name: str, task: str, seed: int, workers: int, budget_full: int, surrogate: Surrogate,
               limit: float) -> dict:
    fn = surrogate.objective(task)
    cfg = method_config("random", seed, workers, budget_full) if name in PEERS else method_config(
        name, seed, workers, budget_full)
    search = None
    if name == "optuna-tpe":
        search = OptunaPeer(workers, seed, None)
    elif name == "optuna-sha":
        search = OptunaPeer(workers, seed, "sha")
    elif name == "optuna-hb":
        search = OptunaPeer(workers, seed, "hyperband")
    elif name == "optuna-sha3":
        search = OptunaPeer(workers, seed, "sha3")
    elif name == "optuna-sha3-rf2":
        search = OptunaPeer(workers, seed, "sha3-rf2")
    elif name == "ray-asha":
        search = RayAshaPeer(workers, seed)
    elif name == "ray-asha3":
        search = RayAshaPeer(workers, seed, grace_period=3)
    elif name == "ray-asha3-rf2":
        search = RayAshaPeer(workers, seed, grace_period=3, reduction_factor=2)
    if search is None:
        search = make_search_method(cfg)
    started = time.perf_counter()
    result = simulate(cfg, fn, max_workers=workers, validate_every=1, time_limit=limit, search=search)
    return {
        "method": name, "task": task, "seed": seed, "workers": workers,
        "trace": result.best_trace, "trials": len(result.trials), "elapsed": result.elapsed,
        "finished": result.shutdown is not None,
        "failed": bool(result.shutdown is not None and result.shutdown.failure),
        "cpu_s": time.perf_counter() - started,
    }


def run_cell(args: tuple) -> list[dict]:
    """Every method in one (task, seed, W) cell for `limit` simulated seconds (the budget, or more)."""
    task, seed, workers, budget_full, limit, methods = args
    surrogate = Surrogate()
    return [run_method(m, task, seed, workers, budget_full, surrogate, limit) for m in methods]
