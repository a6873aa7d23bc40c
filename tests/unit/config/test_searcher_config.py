"""The searcher section is parsed once: the config gives typed, defaulted settings per searcher kind, the
searchers take exactly that object, and a bad searcher is refused at create with its dotted path."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from stalwart.api.errors import ConfigError
from stalwart.config import load_experiment_config, searcher_settings
from stalwart.config.searcher_settings import (
    AdaptiveAshaSettings,
    AshaPromotionSettings,
    AsyncHalvingSettings,
    CustomSettings,
    GridSettings,
    HyperbandSettings,
    OptunaSettings,
    PBTSettings,
    RandomSettings,
    SingleSettings,
    TrialLength,
)
from stalwart.searcher import make_search_method

BASE = {
    "entrypoint": "python3 train.py",
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp"},
    "reproducibility": {"experiment_seed": 3},
}
SPACE = {"lr": {"type": "double", "minval": 0.01, "maxval": 0.1, "count": 2}}
COMMON = {"metric": "loss", "smaller_is_better": True, "source_trial_id": None, "source_checkpoint_uuid": None}
T = {"max_time": 90, "time_metric": "batches"}
LENGTH = TrialLength(90, "batches")


def text(searcher: dict, hparams: dict | None = None) -> str:
    return yaml.safe_dump({**BASE, "hyperparameters": SPACE if hparams is None else hparams,
                           "searcher": {"metric": "loss", **searcher}})


# Each kind with Determined's defaults filled in by the config (and nothing else filling them later).
KINDS = {
    "single": (text({"name": "single", "max_length": {"batches": 50}}, {"lr": 0.1}),
               SingleSettings(**COMMON, length=TrialLength(50, "batches"))),
    "random": (text({"name": "random", "max_trials": 4, "smaller_is_better": False}),
               RandomSettings(**{**COMMON, "smaller_is_better": False}, max_trials=4, max_concurrent_trials=16,
                              length=None)),
    "grid": (text({"name": "grid", "max_length": 20}),
             GridSettings(**COMMON, max_concurrent_trials=16, length=TrialLength(20, "batches"))),
    "adaptive_asha": (text({"name": "adaptive_asha", "max_trials": 8, **T}),
                      AdaptiveAshaSettings(**COMMON, max_trials=8, divisor=4.0, max_concurrent_trials=16,
                                           stop_once=None, sampler="random", length=LENGTH, mode="standard",
                                           max_rungs=5, bracket_rungs=())),
    "async_halving": (text({"name": "async_halving", "num_rungs": 3, "max_trials": 8, "max_length": {"epochs": 9}}),
                      AsyncHalvingSettings(**COMMON, max_trials=8, divisor=4.0, max_concurrent_trials=16,
                                           stop_once=None, sampler="random", length=TrialLength(9, "epochs"),
                                           num_rungs=3)),
    "asha_promotion": (text({"name": "asha_promotion", "max_trials": 8, "bracket_rungs": [3, 2], "sampler": "tpe",
                             **T}),
                       AshaPromotionSettings(**COMMON, max_trials=8, divisor=4.0, max_concurrent_trials=16,
                                             stop_once=None, sampler="tpe", length=LENGTH, mode="standard",
                                             max_rungs=5, bracket_rungs=(3, 2))),
    "hyperband": (text({"name": "hyperband", **T}),
                  HyperbandSettings(**COMMON, max_trials=None, divisor=3.0, max_rungs=5, max_concurrent_trials=16,
                                    length=LENGTH)),
    "pbt": (text({"name": "pbt", "population_size": 4, "num_rounds": 2, "length_per_round": {"epochs": 2}}),
            PBTSettings(**COMMON, population_size=4, num_rounds=2, length_per_round=2, time_metric="epochs",
                        truncate_fraction=0.2, resample_probability=0.2, perturb_factor=0.2)),
    "optuna": (text({"name": "optuna", "max_trials": 5, **T}),
               OptunaSettings(**COMMON, max_trials=5, sampler="tpe", max_concurrent_trials=16, length=LENGTH)),
    "custom": (text({"name": "custom", "search_method": "search:Mine"}),
               CustomSettings(**COMMON, unit="batches", search_method="search:Mine", length=None)),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_searcher_gets_exactly_the_typed_settings_the_config_produced(kind):
    source, expected = KINDS[kind]
    expanded = load_experiment_config(source)
    assert expanded.searcher == expected and type(expanded.searcher) is type(expected)
    assert expanded.searcher.name == kind
    with pytest.raises(dataclasses.FrozenInstanceError):
        expanded.searcher.metric = "other"  # type: ignore[misc]
    user = object() if kind == "custom" else None  # the custom searcher's user object (not called here)
    assert make_search_method(expanded, custom_method=user).settings is expanded.searcher
    # the master stores the expanded config as JSON and builds the searcher from it on every event
    stored = json.loads(json.dumps(expanded.config))
    assert searcher_settings(stored) == expanded.searcher
    assert make_search_method(stored, custom_method=user).settings == expanded.searcher


@pytest.mark.parametrize("searcher, hparams, detail", [
    ({"name": "single", "max_time": 0, "time_metric": "batches"}, {"lr": 0.1},
     "searcher.max_time: expected an integer >= 1, got 0"),
    ({"name": "random", "max_trials": 0}, None, "searcher.max_trials: expected an integer >= 1, got 0"),
    ({"name": "grid", "max_concurrent_trials": -1}, None,
     "searcher.max_concurrent_trials: expected an integer >= 0, got -1"),
    ({"name": "adaptive_asha", "max_trials": 4, "max_length": {"batches": 0}}, None,
     "searcher.max_length.batches: expected an integer >= 1, got 0"),
    ({"name": "adaptive_asha", "max_trials": 4, "mode": "wild", **T}, None,
     "searcher.mode: expected one of standard, aggressive, conservative, got 'wild'"),
    ({"name": "async_halving", "num_rungs": 2, "max_trials": 4, "max_length": 0}, None,
     "searcher.max_length: expected an integer >= 1, got 0"),
    ({"name": "asha_promotion", "max_trials": 4, "divisor": float("inf"), **T}, None,
     "searcher.divisor: expected a number > 1, got inf"),
    ({"name": "asha_promotion", "max_trials": 4, "sampler": "cmaes", **T}, None,
     "searcher.sampler: expected one of random, tpe, evolution, got 'cmaes'"),
    ({"name": "hyperband", "max_length": {"epochs": 0}}, None,
     "searcher.max_length.epochs: expected an integer >= 1, got 0"),
    ({"name": "pbt", "population_size": 2, "num_rounds": 2, "length_per_round": 5,
      "replace_function": {"truncate_fraction": 0.9}}, None,
     "searcher.replace_function.truncate_fraction: expected a number in 0..0.5, got 0.9"),
    ({"name": "pbt", "population_size": 2, "num_rounds": 2, "length_per_round": 5,
      "explore_function": {"perturb_factor": 1.5}}, None,
     "searcher.explore_function.perturb_factor: expected a number in 0..1, got 1.5"),
    ({"name": "pbt", "population_size": 2, "num_rounds": 2, "length_per_round": {"batches": 0}}, None,
     "searcher.length_per_round.batches: expected an integer >= 1, got 0"),
    ({"name": "optuna", "max_trials": 2, "sampler": "grid"}, None,
     "searcher.sampler: expected one of tpe, random, cmaes, got 'grid'"),
    ({"name": "custom", "unit": "steps"}, None, "searcher.unit: expected one of batches, records, epochs, got 'steps'"),
])  # fmt: skip
def test_a_bad_searcher_is_refused_by_the_config_with_its_dotted_path(searcher, hparams, detail):
    with pytest.raises(ConfigError) as info:
        load_experiment_config(text(searcher, hparams))
    assert detail in info.value.details, info.value.details
    # the factory refuses it with the same words (it asks the config; it has no checks of its own)
    raw = {**BASE, "hyperparameters": SPACE if hparams is None else hparams, "searcher": {"metric": "loss", **searcher}}
    with pytest.raises(ConfigError) as info:
        make_search_method(raw)
    assert detail in info.value.details, info.value.details


@pytest.mark.parametrize("name", ["adaptive", "adaptive_simple", "sync_halving"])
def test_end_of_life_names_parse_but_no_experiment_runs_them(name):
    expanded = load_experiment_config(text({"name": name, "max_trials": 4}))
    assert expanded.searcher is None and expanded.warnings
    with pytest.raises(ConfigError) as info:
        make_search_method(expanded)
    names = "single, random, grid, adaptive_asha, async_halving, asha_promotion, hyperband, pbt, optuna, custom"
    assert info.value.details == [
        f"searcher.name: '{name}' is end-of-life in Determined and cannot run; use one of {names}"]
