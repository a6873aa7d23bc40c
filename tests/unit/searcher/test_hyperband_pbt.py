"""hyperband (Li et al. brackets, synchronous halving) and pbt (exploit and explore)."""

import pytest

from searcher_helpers import Driver, build, expand
from stalwart.searcher import Create, Pause, Resume, Shutdown, Stop, TrialExit
from stalwart.searcher.hyperband import hyperband_plan

HP = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}


def v(rid, loss, t):
    return rid, {"loss": loss, "batches": t}, t


def creates(actions):
    return [(a.request_id, a.length) for a in actions if isinstance(a, Create)]


# -- hyperband --------------------------------------------------------------------------------------

def test_hyperband_brackets_match_li_et_al_for_r81_eta3():
    # Li et al. (2018) table 1: s=4: 81 trials at 1; s=3: 34 at 3; s=2: 15 at 9; s=1: 8 at 27; s=0: 5 at 81
    assert hyperband_plan(81, 3, 5, None) == [(5, 81), (4, 34), (3, 15), (2, 8), (1, 5)]
    s = build(expand({"hyperparameters": HP, "searcher": {
        "name": "hyperband", "metric": "loss", "max_time": 81, "time_metric": "batches"}}))
    info = s.describe()
    assert [b["rung_lengths"] for b in info] == [[1, 3, 9, 27, 81], [3, 9, 27, 81], [9, 27, 81], [27, 81], [81]]
    assert [b["rung_trials"] for b in info] == [[81, 27, 9, 3, 1], [34, 11, 3, 1], [15, 5, 1], [8, 2], [5]]


def test_hyperband_caps_brackets_by_max_rungs_and_scales_to_max_trials():
    assert hyperband_plan(10_000, 3, 3, None) == [(3, 9), (2, 5), (1, 3)]  # s_max = 2
    assert hyperband_plan(81, 3, 5, 50) == [(5, 31), (4, 11), (3, 5), (2, 2), (1, 1)]  # 143 scaled to 50


def hyperband(**over):
    searcher = {"name": "hyperband", "metric": "loss", "max_time": 9, "time_metric": "batches", "divisor": 3,
                "max_rungs": 2, "max_concurrent_trials": 0, **over}
    return build(expand({"hyperparameters": HP, "searcher": searcher}))


def test_hyperband_synchronous_halving_by_hand():
    s = hyperband()  # s_max 1: bracket A 3 trials at [3, 9]; bracket B 2 trials at [9]
    assert creates(s.initial_operations()) == [("1", 3), ("2", 3), ("3", 3), ("4", 9), ("5", 9)]
    assert s.on_validation_completed(*v("1", 0.5, 3)) == [Pause("1")]
    assert s.on_validation_completed(*v("2", 0.2, 3)) == [Pause("2")]
    assert s.progress({}) == pytest.approx(6 / (3 * 3 + 1 * 6 + 2 * 9))
    # the rung is complete: keep floor(3/3) = 1 -> 2 goes on; 1 and 3 are stopped
    assert s.on_validation_completed(*v("3", 0.9, 3)) == [Pause("3"), Stop("1"), Stop("3"), Resume("2", 9)]
    assert s.on_validation_completed(*v("2", 0.1, 9)) == [Stop("2")]
    assert s.on_validation_completed(*v("4", 0.3, 9)) == [Stop("4")]
    assert s.on_validation_completed(*v("5", 0.3, 9)) == [Stop("5")]
    for rid in ("2", "4"):
        assert s.on_trial_exited(rid, TrialExit.COMPLETED) == []
    assert s.on_trial_exited("5", TrialExit.COMPLETED) == [Shutdown(failure=False, reason="")]
    assert s.progress({}) == 1.0


def test_hyperband_workers_take_jobs_from_the_first_bracket_first():
    s = hyperband(max_concurrent_trials=2)
    assert creates(s.initial_operations()) == [("1", 3), ("2", 3)]
    assert creates(s.on_validation_completed(*v("1", 0.5, 3))) == [("3", 3)]
    assert creates(s.on_validation_completed(*v("2", 0.4, 3))) == [("4", 9)]  # bracket A has no job left
    out = s.on_validation_completed(*v("3", 0.6, 3))
    assert out == [Pause("3"), Stop("1"), Stop("3"), Resume("2", 9)]  # the resume before bracket B's next


def test_hyperband_replaces_invalid_hp_and_counts_errors_as_worst():
    s = hyperband()
    s.initial_operations()
    assert creates(s.on_trial_exited("1", TrialExit.INVALID_HP)) == [("6", 3)]
    assert s.on_trial_exited("2", TrialExit.ERRORED) == []
    s.on_validation_completed(*v("3", 0.5, 3))
    out = s.on_validation_completed(*v("6", 0.4, 3))
    assert out == [Pause("6"), Stop("3"), Resume("6", 9)]


def test_hyperband_runs_to_shutdown_under_random_events():
    for seed in range(10):
        s = build(expand({"hyperparameters": HP, "searcher": {
            "name": "hyperband", "metric": "loss", "max_time": 27, "time_metric": "batches",
            "max_concurrent_trials": 4}}))
        assert Driver(s, seed=seed).run().done, seed


# -- pbt --------------------------------------------------------------------------------------------

PBT_HP = {
    "lr": {"type": "double", "minval": 0.0, "maxval": 1.0},
    "n": {"type": "int", "minval": 1, "maxval": 100},
    "opt": {"type": "categorical", "vals": ["sgd", "adam"]},
}


def pbt(**over):
    searcher = {"name": "pbt", "metric": "loss", "population_size": 5, "num_rounds": 3, "length_per_round": 10,
                "replace_function": {"truncate_fraction": 0.2},
                "explore_function": {"resample_probability": 0.0, "perturb_factor": 0.2}, **over}
    return build(expand({"hyperparameters": PBT_HP, "searcher": searcher}))


def test_pbt_exploit_clones_the_best_and_stops_the_worst():
    s = pbt()
    first = s.initial_operations()
    assert creates(first) == [(str(i), 10) for i in range(1, 6)]
    hparams = {c.request_id: c.hparams for c in first}
    losses = {"1": 0.5, "2": 0.1, "3": 0.9, "4": 0.3, "5": 0.7}
    for rid in ("1", "2", "3", "4"):
        assert s.on_validation_completed(*v(rid, losses[rid], 10)) == [Pause(rid)]
    out = s.on_validation_completed(*v("5", losses["5"], 10))
    # n = floor(0.2 * 5) = 1: trial 3 (worst) stops; 2 (best) is cloned; the rest go on to 20
    assert out[:2] == [Pause("5"), Stop("3")]
    assert out[2:6] == [Resume("2", 20), Resume("4", 20), Resume("1", 20), Resume("5", 20)]
    child = out[6]
    assert isinstance(child, Create) and child.request_id == "6"
    assert child.checkpoint_from == "2" and child.length == 20
    parent = hparams["2"]
    assert child.hparams["lr"] in (pytest.approx(min(parent["lr"] * 1.2, 1.0)), pytest.approx(parent["lr"] * 0.8))
    assert child.hparams["n"] in (min(-(-parent["n"] * 12 // 10), 100), max(parent["n"] * 8 // 10, 1))
    assert child.hparams["opt"] == parent["opt"]
    assert s.progress({}) == pytest.approx(1 / 3)


def test_pbt_last_round_stops_trials_as_they_report_and_shuts_down():
    s = pbt(num_rounds=1, population_size=2)
    s.initial_operations()
    assert s.on_validation_completed(*v("1", 0.5, 10)) == [Stop("1")]
    assert s.on_validation_completed(*v("2", 0.4, 10)) == [Stop("2")]
    assert s.on_trial_exited("1", TrialExit.COMPLETED) == []
    assert s.on_trial_exited("2", TrialExit.COMPLETED) == [Shutdown(failure=False, reason="")]


def test_pbt_invalid_hp_is_redrawn_in_its_slot_and_an_errored_survivor_is_replaced_by_a_clone():
    s = pbt(population_size=5)
    s.initial_operations()
    out = s.on_trial_exited("3", TrialExit.INVALID_HP)
    assert creates(out) == [("6", 10)] and out[0].checkpoint_from is None
    assert s.on_trial_exited("4", TrialExit.ERRORED) == []  # worst value for the round
    for rid, loss in (("1", 0.5), ("2", 0.1), ("5", 0.3)):
        s.on_validation_completed(*v(rid, loss, 10))
    out = s.on_validation_completed(*v("6", 0.2, 10))
    # ranking 2, 6, 5, 1, 4(errored): 4 is truncated (and already gone); 2 is cloned
    assert [a for a in out if isinstance(a, Stop)] == []
    assert [(c.request_id, c.checkpoint_from) for c in out if isinstance(c, Create)] == [("7", "2")]


def test_pbt_length_per_round_may_be_a_length_map():
    s = pbt(length_per_round={"epochs": 2})
    s.initial_operations()
    assert s.reader.time_metric == "epochs"
    assert s.on_validation_completed("1", {"loss": 0.3, "epochs": 2}, 500) == [Pause("1")]


def test_pbt_runs_to_shutdown_under_random_events():
    for seed in range(10):
        assert Driver(pbt(), seed=seed).run().done, seed
