"""Searcher variants: required fields, defaults, time/length rules and end-of-life names."""

from __future__ import annotations

import pytest

from stalwart.config import load_experiment_config


def test_random_defaults(minimal, expand):
    minimal["searcher"] = {"name": "random", "metric": "acc", "max_trials": 5, "smaller_is_better": False}
    s = expand(minimal)["searcher"]
    assert s["max_concurrent_trials"] == 16
    assert s["smaller_is_better"] is False
    assert s["max_length"] is None


def test_grid_defaults(minimal, expand):
    minimal["searcher"] = {"name": "grid", "metric": "loss"}
    assert expand(minimal)["searcher"]["max_concurrent_trials"] == 16


def test_adaptive_asha_defaults(minimal, expand):
    minimal["searcher"] = {
        "name": "adaptive_asha",
        "metric": "loss",
        "max_trials": 16,
        "time_metric": "batches",
        "max_time": 1000,
    }
    s = expand(minimal)["searcher"]
    assert (s["mode"], s["divisor"], s["max_rungs"], s["bracket_rungs"]) == ("standard", 4, 5, [])
    assert (s["max_concurrent_trials"], s["stop_once"]) == (16, None)  # null: stop-based unless set


def test_adaptive_asha_legacy_max_length(minimal, expand):
    minimal["searcher"] = {
        "name": "adaptive_asha",
        "metric": "loss",
        "max_trials": 16,
        "max_length": {"epochs": 5},
        "mode": "aggressive",
    }
    assert expand(minimal)["searcher"]["max_length"] == {"epochs": 5}


def test_adaptive_asha_needs_a_length(minimal, problems):
    minimal["searcher"] = {"name": "adaptive_asha", "metric": "loss", "max_trials": 4}
    assert problems(minimal) == [
        "searcher: adaptive_asha needs time_metric and max_time (or the legacy max_length)"
    ]


def test_async_halving(minimal, problems, expand):
    minimal["searcher"] = {"name": "async_halving", "metric": "loss", "max_length": 100}
    assert problems(minimal) == ["searcher.num_rungs: required", "searcher.max_trials: required"]
    minimal["searcher"].update(num_rungs=3, max_trials=9)
    s = expand(minimal)["searcher"]
    assert (s["divisor"], s["max_concurrent_trials"]) == (4, 16)


@pytest.mark.parametrize(
    ("extra", "detail"),
    [
        ({"mode": "wild"}, "searcher.mode: expected one of standard, aggressive, conservative, got 'wild'"),
        ({"divisor": 1}, "searcher.divisor: expected a number > 1, got 1"),
        ({"max_rungs": 0}, "searcher.max_rungs: expected an integer >= 1, got 0"),
        ({"bracket_rungs": [2, "x"]}, "searcher.bracket_rungs[1]: expected an integer >= 1, got 'x'"),
        ({"max_trials": 0}, "searcher.max_trials: expected an integer >= 1, got 0"),
        ({"max_concurrent_trials": -1}, "searcher.max_concurrent_trials: expected an integer >= 0, got -1"),
        ({"max_time": 0}, "searcher.max_time: expected an integer >= 1, got 0"),
        ({"smaller_is_better": "yes"}, "searcher.smaller_is_better: expected a boolean (true or false), got 'yes'"),
        ({"metric": ""}, "searcher.metric: must not be empty"),
    ],
)  # fmt: skip
def test_asha_field_errors(minimal, problems, extra, detail):
    minimal["searcher"] = {
        "name": "adaptive_asha",
        "metric": "loss",
        "max_trials": 4,
        "time_metric": "batches",
        "max_time": 100,
        **extra,
    }
    assert problems(minimal) == [detail]


def test_max_time_and_time_metric_go_together(minimal, problems, expand):
    minimal["searcher"]["max_time"] = 10
    assert problems(minimal) == ["searcher.time_metric: required when max_time is set"]
    minimal["searcher"] = {"name": "single", "metric": "loss", "time_metric": "epochs"}
    assert problems(minimal) == ["searcher.max_time: required when time_metric is set"]
    minimal["searcher"]["max_time"] = 3
    assert expand(minimal)["searcher"]["max_time"] == 3


def test_random_does_not_take_max_time(minimal, problems):
    minimal["searcher"] = {"name": "random", "metric": "loss", "max_trials": 2, "max_time": 5}
    assert problems(minimal) == ["searcher.max_time: unknown key; did you mean 'max_trials'?"]


def test_source_trial_and_checkpoint_are_exclusive(minimal, problems):
    minimal["searcher"].update(source_trial_id=3, source_checkpoint_uuid="abc")
    assert problems(minimal) == [
        "searcher: give at most one of source_trial_id and source_checkpoint_uuid"
    ]


def test_name_and_metric_required(minimal, problems):
    minimal["searcher"] = {"max_trials": 3}
    assert problems(minimal) == ["searcher.name: required", "searcher.metric: required"]


def test_unknown_name(minimal, problems):
    minimal["searcher"] = {"name": "bayes", "metric": "loss"}
    assert problems(minimal) == [
        "searcher.name: expected one of single, random, grid, adaptive_asha, async_halving, asha_promotion, "
        "hyperband, pbt, optuna, custom, adaptive, adaptive_simple, sync_halving, got 'bayes'"
    ]


@pytest.mark.parametrize("name", ["adaptive", "adaptive_simple", "sync_halving"])
def test_end_of_life_names_parse_with_warning(minimal, name):
    minimal["searcher"] = {"name": name, "metric": "loss", "budget": {"batches": 100}, "train_stragglers": True}
    result = load_experiment_config(minimal)
    assert result.config["searcher"]["budget"] == {"batches": 100}
    assert result.warnings == [
        f"searcher.name: '{name}' is end-of-life in Determined; it is accepted for parsing only"
    ]


def test_custom_searcher(minimal, problems):
    minimal["searcher"] = {"name": "custom", "metric": "loss", "unit": "batches", "search_method": "s:M"}
    result = load_experiment_config(minimal)
    assert result.config["searcher"]["unit"] == "batches"
    assert result.config["searcher"]["search_method"] == "s:M"
    assert result.warnings == []
    minimal["searcher"]["unit"] = "steps"
    assert problems(minimal) == ["searcher.unit: expected one of batches, records, epochs, got 'steps'"]
