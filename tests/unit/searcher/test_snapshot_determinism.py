"""Every searcher: snapshot -> restore -> identical next actions; same seed -> same trials.

Property style: each searcher is driven by a seeded stream of events (validations at random
metrics, completions, errors, invalid hyperparameters, cancellations); at several cut points its
snapshot goes through JSON into a freshly built searcher, and the rest of the stream must give
both the same actions.
"""

import json

import pytest

from searcher_helpers import Driver, build, expand, replay, roundtrip
from stalwart.searcher import Create

HP = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "count": 3},
    "n": {"type": "int", "minval": 1, "maxval": 6, "count": 3},
    "opt": {"type": "categorical", "vals": ["sgd", "adam"]},
    "deep": {"x": {"type": "double", "minval": 0, "maxval": 1, "count": 2}, "k": 4},
}
ONE = {"lr": 0.1, "deep": {"k": 4}}
T = {"max_time": 32, "time_metric": "batches"}

SEARCHERS = {
    "single": (ONE, {"name": "single", "max_length": {"batches": 32}}),
    "single_sampled": (HP, {"name": "single", "max_length": {"batches": 32}}),
    "random": (HP, {"name": "random", "max_trials": 12, "max_concurrent_trials": 3}),
    "grid": (HP, {"name": "grid", "max_concurrent_trials": 4}),
    "async_halving": (HP, {"name": "async_halving", "num_rungs": 3, "max_trials": 16, "divisor": 2,
                           "max_concurrent_trials": 4, **T}),
    "adaptive_asha": (HP, {"name": "adaptive_asha", "max_trials": 24, "divisor": 2, "max_concurrent_trials": 6, **T}),
    "adaptive_asha_mct0": (HP, {"name": "adaptive_asha", "max_trials": 16, "mode": "conservative",
                                "max_concurrent_trials": 0, **T}),
    "asha_promotion": (HP, {"name": "asha_promotion", "max_trials": 24, "divisor": 2, "max_concurrent_trials": 5, **T}),
    "adaptive_asha_tpe": (HP, {"name": "adaptive_asha", "sampler": "tpe", "max_trials": 24, "divisor": 2,
                               "max_concurrent_trials": 6, **T}),
    "asha_promotion_tpe": (HP, {"name": "asha_promotion", "sampler": "tpe", "max_trials": 20, "divisor": 2,
                                "max_concurrent_trials": 4, **T}),
    "adaptive_asha_evolution": (HP, {"name": "adaptive_asha", "sampler": "evolution", "max_trials": 30, "divisor": 2,
                                     "max_concurrent_trials": 6, **T}),
    "asha_promotion_evolution": (HP, {"name": "asha_promotion", "sampler": "evolution", "max_trials": 24,
                                      "divisor": 2, "max_concurrent_trials": 4, **T}),
    "stop_once_false": (HP, {"name": "async_halving", "num_rungs": 3, "max_trials": 12, "divisor": 2,
                             "stop_once": False, "max_concurrent_trials": 3, **T}),
    "hyperband": (HP, {"name": "hyperband", "divisor": 2, "max_rungs": 4, "max_concurrent_trials": 4, **T}),
    "pbt": (HP, {"name": "pbt", "population_size": 6, "num_rounds": 4, "length_per_round": 8,
                 "replace_function": {"truncate_fraction": 0.34},
                 "explore_function": {"resample_probability": 0.3, "perturb_factor": 0.2}}),
    "optuna": (HP, {"name": "optuna", "max_trials": 10, "max_concurrent_trials": 3, "max_length": {"batches": 32}}),
    "optuna_random": (HP, {"name": "optuna", "sampler": "random", "max_trials": 8, "max_concurrent_trials": 2,
                           "max_length": {"batches": 32}}),
    "optuna_cmaes": (HP, {"name": "optuna", "sampler": "cmaes", "max_trials": 12, "max_concurrent_trials": 3,
                          "max_length": {"batches": 32}}),
}


def config(key, seed=7):
    hp, searcher = SEARCHERS[key]
    return expand({"hyperparameters": hp, "reproducibility": {"experiment_seed": seed},
                   "searcher": {"metric": "loss", **searcher}})


@pytest.mark.parametrize("key", sorted(SEARCHERS))
def test_snapshot_restore_gives_identical_next_actions(key):
    cfg = config(key)
    for stream_seed in range(4):
        driver = Driver(build(cfg), seed=stream_seed).run()
        assert driver.done, f"{key}: the search did not finish (stream {stream_seed})"
        events = driver.events
        cuts = sorted({0, 1, len(events) // 3, len(events) // 2, len(events) - 1})
        for cut in cuts:
            a = build(cfg)
            a.initial_operations()
            replay(a, events[:cut])
            snap = roundtrip(a.snapshot())
            b = build(cfg)
            b.restore(snap)
            assert b.initial_operations() == []
            assert replay(b, events[cut:]) == replay(a, events[cut:]), f"{key}: cut {cut}"
            assert json.dumps(a.snapshot(), sort_keys=True) == json.dumps(b.snapshot(), sort_keys=True)
            assert a.progress({}) == b.progress({})


@pytest.mark.parametrize("key", sorted(SEARCHERS))
def test_same_seed_same_trials_other_seed_other_trials(key):
    one = Driver(build(config(key)), seed=1).run()
    two = Driver(build(config(key)), seed=1).run()
    assert one.actions == two.actions
    assert [0 <= c.seed < 2**31 for c in one.created] == [True] * len(one.created)
    other = Driver(build(config(key, seed=8)), seed=1).run()
    if key not in ("single", "grid"):
        assert [c.hparams for c in other.created] != [c.hparams for c in one.created]
    assert [c.seed for c in other.created] != [c.seed for c in one.created]


@pytest.mark.parametrize("key", sorted(SEARCHERS))
def test_progress_stays_in_range_and_ends_at_one(key):
    search = build(config(key))
    driver = Driver(search, seed=2)
    values = []
    while driver.step():
        values.append(search.progress({c.request_id: 0.5 for c in driver.created}))
    assert all(0.0 <= p <= 1.0 for p in values)
    assert search.progress({}) == 1.0


def test_request_ids_are_unique_and_increasing():
    driver = Driver(build(config("adaptive_asha")), seed=0).run()
    ids = [int(c.request_id) for c in driver.created]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(isinstance(c, Create) for c in driver.created)
