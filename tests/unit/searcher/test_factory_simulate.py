"""Bad input gives clear errors (config package and factory); simulate and preview."""

import copy

import pytest

from searcher_helpers import BASE, build, expand
from stalwart.api.errors import ConfigError
from stalwart.config import load_experiment_config
from stalwart.searcher import SimulatedExit, TrialExit, make_search_method, preview, simulate
from stalwart.searcher.asha import Tournament

HP = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}


def raw(hparams, searcher):
    return {**copy.deepcopy(BASE), "hyperparameters": hparams, "searcher": {"metric": "loss", **searcher}}


BAD = [
    ("grid without count", {"lr": {"type": "double", "minval": 0, "maxval": 1}}, {"name": "grid"},
     "hyperparameters.lr.count: required for the grid searcher"),
    ("minval >= maxval", {"n": {"type": "int", "minval": 5, "maxval": 5}}, {"name": "random", "max_trials": 2},
     "hyperparameters.n.minval: must be less than maxval (got 5 >= 5)"),
    ("empty categorical", {"c": {"type": "categorical", "vals": []}}, {"name": "random", "max_trials": 2},
     "hyperparameters.c.vals"),
]


@pytest.mark.parametrize("label, hparams, searcher, message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_rejected_by_the_config_and_by_make_search_method(label, hparams, searcher, message):
    with pytest.raises(ConfigError) as info:
        load_experiment_config(raw(hparams, searcher))
    assert any(message in d for d in info.value.details), info.value.details
    # Handed an unvalidated config, the factory asks the config package, which refuses it the same way.
    unvalidated = raw(hparams, searcher)
    with pytest.raises(ConfigError) as info:
        search = make_search_method(unvalidated)
        search.initial_operations()
    assert any(message.split(":")[0] in d for d in info.value.details), info.value.details


@pytest.mark.parametrize("searcher, message", [
    ({"name": "adaptive_asha", "max_trials": 4}, "needs time_metric and max_time"),
    ({"name": "hyperband"}, "needs time_metric and max_time"),
    ({"name": "pbt", "num_rounds": 2, "length_per_round": 5}, "searcher.population_size: required"),
    ({"name": "pbt", "population_size": 2, "num_rounds": 2}, "searcher.length_per_round"),
    ({"name": "pbt", "population_size": 2, "num_rounds": 2, "length_per_round": 5,
      "replace_function": {"truncate_fraction": 0.9}}, "searcher.replace_function.truncate_fraction"),
    ({"name": "optuna", "max_trials": 2, "sampler": "grid"}, "searcher.sampler"),
    ({"name": "random"}, "searcher.max_trials: required"),
    ({"name": "sync_halving"}, "searcher.name"),
    ({"name": "adaptive_asha", "max_trials": 4, "max_time": 10, "time_metric": "batches", "mode": "wild"},
     "searcher.mode"),
])
def test_factory_errors_name_the_field(searcher, message):
    with pytest.raises(ConfigError) as info:
        make_search_method(raw(HP, searcher))
    assert message in info.value.full_message()


def quadratic(hp, step):
    return (hp["lr"] - 0.3) ** 2 + 1.0 / step


def asha_config(**over):
    return expand({"hyperparameters": HP, "searcher": {
        "name": "adaptive_asha", "metric": "loss", "max_trials": 40, "max_time": 64, "time_metric": "batches",
        "max_concurrent_trials": 8, **over}})


def test_simulate_runs_asha_to_shutdown_with_fewer_workers_than_concurrency():
    result = simulate(asha_config(), quadratic, max_workers=3)
    assert result.shutdown is not None and not result.shutdown.failure
    assert len(result.trials) == 40
    assert all(t.status == "done" for t in result.trials.values())
    assert result.best == min(v for t in result.trials.values() for _, _, v in t.validations)
    assert result.elapsed > 0 and result.worker_time >= result.elapsed
    lengths = result.lengths()
    assert max(lengths) == 64 and sum(lengths.values()) == 40
    assert result.time_to_reach(result.best) <= result.elapsed


def test_simulate_is_deterministic_and_uses_the_elapsed_time_from_the_metric_fn():
    def timed(hp, step):
        return quadratic(hp, step), step * (1 + hp["lr"])

    one = simulate(asha_config(), timed, max_workers=4)
    two = simulate(asha_config(), timed, max_workers=4)
    assert one.best_trace == two.best_trace and one.elapsed == two.elapsed
    plain = simulate(asha_config(), quadratic, max_workers=4)
    assert one.elapsed != plain.elapsed


def test_simulate_handles_pause_resume_and_clones():
    cfg = expand({"hyperparameters": HP, "searcher": {
        "name": "pbt", "metric": "loss", "population_size": 5, "num_rounds": 3, "length_per_round": 10}})
    result = simulate(cfg, quadratic, max_workers=2)
    assert result.shutdown is not None
    clones = [t for t in result.trials.values() if t.parent is not None]
    assert clones and all(t.validations[0][1] > 10 for t in clones)  # started from the parent's step
    assert max(t.step for t in result.trials.values()) == 30


def test_simulated_exits_reach_the_searcher():
    def flaky(hp, step):
        if hp["lr"] > 0.8:
            raise SimulatedExit(TrialExit.INVALID_HP)
        return quadratic(hp, step)

    cfg = expand({"hyperparameters": HP, "searcher": {
        "name": "random", "metric": "loss", "max_trials": 10, "max_concurrent_trials": 2, "max_length": 5}})
    result = simulate(cfg, flaky, max_workers=2)
    valid = [t for t in result.trials.values() if t.exit is TrialExit.COMPLETED]
    invalid = [t for t in result.trials.values() if t.exit is TrialExit.INVALID_HP]
    assert len(valid) == 10 and invalid and all(t.hparams["lr"] > 0.8 for t in invalid)


def test_preview_counts_trials_per_rung_and_length():
    p = preview(asha_config())
    assert p.total_trials == 40
    assert sum(n for n, _ in p.rows) == 40
    assert p.rows[-1][1] == 64 and p.unit == "batches"
    search = build(asha_config())
    assert isinstance(search, Tournament)
    assert [[r["length"] for r in b["rungs"]] for b in p.brackets] == [b.units for b in search.brackets]
    for bracket in p.brackets:
        counts = [r["trials"] for r in bracket["rungs"]]
        assert counts == sorted(counts, reverse=True) and counts[0] <= bracket["max_trials"]
    text = p.text()
    assert "This search will create a total of 40 trial(s)." in text
    assert "rung 0:" in text and "train to 64 batches" in text


def test_preview_of_random_and_grid():
    p = preview(expand({"hyperparameters": {"x": {"type": "int", "minval": 0, "maxval": 2, "count": 3}},
                        "searcher": {"name": "grid", "metric": "loss", "max_length": {"epochs": 3}}}))
    assert p.total_trials == 3 and p.rows == [(3, 3)] and p.unit == "epochs" and p.brackets == []
