"""ASHA with `sampler: tpe`: what the model is told, that it learns from rung results, and the config."""

import statistics

import pytest

from searcher_helpers import TOY_HP as HP, build, expand, objective, run_search
from stalwart.api.errors import ConfigError
from stalwart.searcher import Create, Stop, TrialExit


def creates(actions):
    return [a for a in actions if isinstance(a, Create)]


def halving(**over):
    searcher = {"name": "async_halving", "metric": "loss", "num_rungs": 3, "divisor": 2, "max_trials": 6,
                "max_concurrent_trials": 2, "max_time": 8, "time_metric": "batches", "sampler": "tpe", **over}
    return build(expand({"hyperparameters": HP, "searcher": searcher}))


def trials_by_rid(search):
    model = search.model
    frozen = model.study.get_trials(deepcopy=False)
    return {r["rid"]: frozen[r["number"]] for r in model.records}


def v(rid, loss, t):
    return rid, {"loss": loss, "batches": t}, t


def test_hyperparameters_come_from_the_model_and_keep_the_space_shape():
    s = halving()
    first = creates(s.initial_operations())
    assert [c.request_id for c in first] == ["1", "2"]
    for c in first:
        assert set(c.hparams) == {"x", "y", "k", "fixed"} and c.hparams["fixed"] == 3
        assert 0 <= c.hparams["x"] <= 1 and c.hparams["k"] in ("a", "b", "c")
        assert c.length == 8
    assert [r["rid"] for r in s.model.records] == ["1", "2"]


def test_rung_results_stops_and_exits_are_told_to_the_model():
    s = halving()  # rungs [2, 4, 8]
    s.initial_operations()
    assert s.on_validation_completed(*v("1", 0.5, 2)) == []  # up to rung 1
    out = s.on_validation_completed(*v("2", 0.7, 2))  # stopped at rung 0
    assert out[0] == Stop("2")
    [three] = creates(out)
    out = s.on_validation_completed(*v("1", 0.3, 8))  # rungs 1 and 2 in one go: finished
    assert out[0] == Stop("1")
    [four] = creates(out)
    s.on_trial_exited("3", TrialExit.ERRORED)  # nothing reported: FAIL
    s.on_validation_completed(*v("4", 0.1, 2))
    s.on_trial_exited("4", TrialExit.ERRORED)  # errored after a rung result: PRUNED with it
    s.on_trial_exited("2", TrialExit.COMPLETED)  # already told when stopped: unchanged
    s.on_validation_completed(*v("5", 0.2, 2))
    s.on_trial_exited("5", TrialExit.INVALID_HP)  # invalid hyperparameters: FAIL whatever it reported
    t = trials_by_rid(s)
    assert t["5"].state.name == "FAIL"
    assert (t["1"].state.name, t["1"].value, t["1"].intermediate_values) == ("COMPLETE", 0.3, {2: 0.5, 4: 0.3, 8: 0.3})
    assert (t["2"].state.name, t["2"].intermediate_values) == ("PRUNED", {2: 0.7})
    assert t[three.request_id].state.name == "FAIL"
    assert (t["4"].state.name, t["4"].intermediate_values) == ("PRUNED", {2: 0.1})
    assert {r["rid"]: r["state"] for r in s.model.records}["6"] == "RUNNING"  # 5's replacement


def test_bigger_is_better_is_told_negated_to_a_minimising_study():
    s = halving(smaller_is_better=False)
    s.initial_operations()
    s.on_validation_completed(*v("1", 0.9, 8))
    t = trials_by_rid(s)["1"]
    assert s.model.study.direction.name == "MINIMIZE" and t.value == -0.9


def test_tpe_fed_with_rung_results_samples_better_trials_than_random_draws():
    tpe, rnd = run_search("tpe"), run_search("random")
    assert len(tpe) == len(rnd) == 80
    late = slice(40, 80)  # after TPE's 10 random start-up trials and a few rungs of results
    assert statistics.mean(objective(c.hparams, 27) for c in tpe[late]) < \
        0.6 * statistics.mean(objective(c.hparams, 27) for c in rnd[late])
    assert [c.hparams for c in run_search("tpe")] == [c.hparams for c in tpe]  # same seed, same trials


def test_asha_promotion_tells_closed_out_trials_as_pruned():
    cfg = expand({"hyperparameters": HP, "searcher": {
        "name": "asha_promotion", "metric": "loss", "max_trials": 4, "divisor": 2, "mode": "aggressive",
        "max_concurrent_trials": 4, "max_time": 4, "time_metric": "batches", "sampler": "tpe"}})
    s = build(cfg)  # one bracket, rungs [1, 2, 4]
    s.initial_operations()
    for rid, loss in (("1", 0.4), ("2", 0.1), ("3", 0.3), ("4", 0.2)):
        s.on_validation_completed(*v(rid, loss, 1))
    t = trials_by_rid(s)
    assert {rid: tr.state.name for rid, tr in t.items()} == {"1": "PRUNED", "2": "RUNNING", "3": "PRUNED",
                                                           "4": "RUNNING"}
    assert t["1"].intermediate_values == {1: 0.4}


@pytest.mark.parametrize("name", ["adaptive_asha", "async_halving", "asha_promotion"])
def test_an_unknown_sampler_is_a_clear_config_error(name):
    searcher = {"name": name, "metric": "loss", "max_trials": 4, "num_rungs": 2, "max_time": 8,
                "time_metric": "batches", "sampler": "cmaes"}
    with pytest.raises(ConfigError) as info:
        build(expand({"hyperparameters": HP, "searcher": searcher}))
    assert "searcher.sampler" in str(info.value) + " ".join(info.value.details)
    assert "random" in " ".join(info.value.details) and "tpe" in " ".join(info.value.details)
