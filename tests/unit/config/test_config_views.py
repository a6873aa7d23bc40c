"""Typed accessors over the expanded config."""

from __future__ import annotations

from stalwart.config import (
    Length,
    checkpoint_gc_policy,
    checkpoint_storage,
    environment_variables,
    experiment_seed,
    global_batch_size,
    max_length,
    max_restarts,
    max_time,
    records_per_epoch,
    searcher_metric,
    slots_per_trial,
    smaller_is_better,
)


def test_views_over_expanded_config(minimal, expand):
    minimal.update(
        {
            "searcher": {
                "name": "adaptive_asha",
                "metric": "acc",
                "smaller_is_better": False,
                "max_trials": 4,
                "time_metric": "batches",
                "max_time": 500,
                "max_length": 300,
            },
            "hyperparameters": {"global_batch_size": 64, "lr": 0.1},
            "max_restarts": 2,
            "records_per_epoch": 6000,
            "reproducibility": {"experiment_seed": 42},
            "resources": {"slots_per_trial": 4},
            "environment": {"environment_variables": {"cpu": ["A=1", "A=2"], "cuda": ["G=1"]}},
        }
    )
    minimal["checkpoint_storage"]["save_experiment_best"] = 2
    cfg = expand(minimal)
    assert searcher_metric(cfg) == "acc"
    assert smaller_is_better(cfg) is False
    assert max_length(cfg) == Length("batches", 300)
    assert max_time(cfg) == (500, "batches")
    assert max_restarts(cfg) == 2
    assert records_per_epoch(cfg) == 6000
    assert experiment_seed(cfg) == 42
    assert slots_per_trial(cfg) == 4
    assert global_batch_size(cfg) == 64
    assert checkpoint_gc_policy(cfg) == (2, 1, 1)
    assert checkpoint_storage(cfg)["host_path"] == "/tmp/ckpts"
    assert environment_variables(cfg) == {"A": "2"}
    assert environment_variables(cfg, slot_type="gpu") == {"G": "1"}


def test_views_defaults(minimal, expand):
    cfg = expand(minimal)
    assert max_length(cfg) is None
    assert max_time(cfg) is None
    assert global_batch_size(cfg) is None
    assert smaller_is_better(cfg) is True
    assert checkpoint_gc_policy(cfg) == (0, 1, 1)
    assert environment_variables(cfg) == {}
    assert 0 <= experiment_seed(cfg) < 2**31


def test_views_tolerate_raw_and_partial_dicts():
    raw = {"hyperparameters": {"global_batch_size": 32}, "searcher": {"max_length": {"epochs": 2}}}
    assert global_batch_size(raw) == 32
    assert max_length(raw) == Length("epochs", 2)
    assert max_restarts({}) == 5
    assert slots_per_trial({}) == 1
    assert environment_variables({"environment": {"environment_variables": ["X=1"]}}) == {"X": "1"}
    searched = {"type": "int", "minval": 1, "maxval": 4}
    assert global_batch_size({"hyperparameters": {"global_batch_size": searched}}) is None
