"""Stop-based ASHA (async_halving, adaptive_asha): §3's formulas, by hand-computed cases."""

import pytest

from searcher_helpers import build, expand
from stalwart.config import searcher_settings
from stalwart.searcher import Create, Shutdown, Stop, TrialExit
from stalwart.searcher._common import WORST, floor_log, rung_units
from stalwart.searcher.asha import (
    bracket_max_concurrent,
    bracket_max_trials,
    bracket_rungs_for,
    max_rungs_for,
    plan_brackets,
)

HP = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}


def creates(actions):
    return [a.request_id for a in actions if isinstance(a, Create)]


def v(rid, loss, t):
    return rid, {"loss": loss, "batches": t}, t


# -- formulas ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("total, d, rungs, units", [
    (100, 4, 3, [6, 25, 100]),  # floor(100/16), floor(100/4), 100
    (1000, 10, 4, [1, 10, 100, 1000]),
    (8, 2, 3, [2, 4, 8]),
    (5, 4, 3, [1, 1, 5]),  # at least 1
    (100, 2.5, 3, [16, 40, 100]),  # non-integral divisor: floor(100/6.25), floor(100/2.5)
])
def test_rung_lengths(total, d, rungs, units):
    assert rung_units(total, d, rungs) == units


def test_max_rungs_uses_exact_integer_logs():
    assert floor_log(1000, 10) == 3 and floor_log(999, 10) == 2 and floor_log(64, 4) == 3
    assert max_rungs_for(5, 1000, 1000, 10) == 4  # min(5, 3+1, 3+1)
    assert max_rungs_for(5, 100, 64, 4) == 4  # min(5, floor(log4 100)+1 = 4, floor(log4 64)+1 = 4)
    assert max_rungs_for(3, 10**6, 10**6, 4) == 3
    assert max_rungs_for(5, 100, 10, 4) == 2  # floor(log4 10) + 1


def test_bracket_rungs_per_mode_sorted_descending():
    assert bracket_rungs_for("aggressive", 4) == [4]
    assert bracket_rungs_for("standard", 4) == [4, 3, 2]  # (4-1)//2+1 = 2 .. 4
    assert bracket_rungs_for("standard", 5) == [5, 4, 3]
    assert bracket_rungs_for("conservative", 3) == [3, 2, 1]


def test_trials_per_bracket():
    # weights 4^3/4 = 16, 4^2/3 = 5.33, 4/2 = 2 (sum 23.33): 43, 14, 5 = 62; remainder 2 to bracket 0
    assert bracket_max_trials(64, 4, [4, 3, 2]) == [45, 14, 5]
    assert bracket_max_trials(3, 4, [4, 3, 2]) == [1, 1, 1]  # at least one each
    assert bracket_max_trials(100, 4, [3]) == [100]


def test_concurrency_per_bracket():
    assert bracket_max_concurrent(8, 4, [45, 14, 5]) == [3, 3, 2]
    assert bracket_max_concurrent(2, 4, [45, 14, 5]) == [1, 1, 1]  # raised to the bracket count
    assert bracket_max_concurrent(0, 4, [45, 14, 5]) == [5, 5, 5]  # max(last bracket's trials, int(d))
    assert bracket_max_concurrent(0, 4, [45, 14, 2]) == [4, 4, 4]


def test_plan_from_a_config():
    cfg = expand({"hyperparameters": HP, "searcher": {
        "name": "adaptive_asha", "metric": "loss", "max_trials": 64, "max_time": 100, "time_metric": "batches",
        "max_concurrent_trials": 8}})
    assert plan_brackets(searcher_settings(cfg), 100) == ([4, 3, 2], [45, 14, 5], [3, 3, 2])
    explicit = expand({"hyperparameters": HP, "searcher": {
        "name": "adaptive_asha", "metric": "loss", "max_trials": 10, "max_length": {"epochs": 16},
        "bracket_rungs": [1, 3], "divisor": 2}})
    rungs, trials, mct = plan_brackets(searcher_settings(explicit), 16)
    # weights 2^2/3 = 1.33 and 1: floor(5.71) = 5, floor(4.29) = 4, remainder 1 to bracket 0
    assert (rungs, trials, mct) == ([3, 1], [6, 4], [8, 8])


# -- one bracket ------------------------------------------------------------------------------------

def halving(**over):
    searcher = {"name": "async_halving", "metric": "loss", "num_rungs": 3, "divisor": 2, "max_trials": 6,
                "max_concurrent_trials": 2, "max_time": 8, "time_metric": "batches", **over}
    return build(expand({"hyperparameters": HP, "searcher": searcher}))


def test_async_halving_initial_trials():
    assert creates(halving().initial_operations()) == ["1", "2"]
    assert len(halving(max_concurrent_trials=0, divisor=4, max_trials=10).initial_operations()) == 10  # min(4^2, 10)
    assert len(halving(max_concurrent_trials=0, divisor=2, max_trials=10).initial_operations()) == 4  # 2^2
    first = halving().initial_operations()[0]
    assert first.length == 8  # stop-based: every trial may train to max_time


def test_async_halving_stops_and_promotions_by_hand():
    s = halving()  # rungs [2, 4, 8], divisor 2, max_trials 6
    s.initial_operations()
    assert s.on_validation_completed(*v("1", 0.5, 2)) == []  # rung0 [0.5]: keep max(1//2,1)=1, pos 0
    out = s.on_validation_completed(*v("2", 0.7, 2))  # rung0 [.5,.7]: pos 1 >= keep 1
    assert out[0] == Stop("2") and creates(out) == ["3"]
    assert s.on_validation_completed(*v("3", 0.1, 2)) == []  # pos 0 of 3, keep 1: up
    assert s.on_validation_completed(*v("1", 0.4, 1)) == []  # time 1 < rung 1's 4: nothing
    assert s.on_validation_completed(*v("1", 0.4, 4)) == []  # rung1 [0.4]: up
    out = s.on_validation_completed(*v("1", 0.3, 8))  # last rung: finished
    assert out[0] == Stop("1") and creates(out) == ["4"]
    out = s.on_validation_completed(*v("3", 0.2, 8))  # rung1 (0.2 first) then rung2 in one go
    assert out[0] == Stop("3") and creates(out) == ["5"]
    bracket = s.brackets[0]
    assert [[m for m, _ in rung] for rung in bracket.rungs] == [[0.1, 0.5, 0.7], [0.2, 0.4], [0.2, 0.3]]
    assert s.on_validation_completed(*v("2", 0.0, 4)) == []  # a stopped trial is ignored
    # exits
    assert s.on_trial_exited("2", TrialExit.COMPLETED) == []
    assert s.on_trial_exited("1", TrialExit.COMPLETED) == []
    assert s.on_trial_exited("3", TrialExit.COMPLETED) == []
    out = s.on_trial_exited("4", TrialExit.ERRORED)  # worst at rung 0; 5 valid < 6
    assert creates(out) == ["6"]
    assert bracket.rungs[0][-1] == [WORST, "4"]
    out = s.on_trial_exited("5", TrialExit.INVALID_HP)  # always replaced, not counted
    assert creates(out) == ["7"]
    out = s.on_validation_completed(*v("6", 0.05, 2))  # rung0 [.05,.1,.5,.7,W]: pos 0 < keep 2
    assert out == []
    out = s.on_validation_completed(*v("7", 0.9, 2))  # pos 5 >= keep 3: stop; 6 valid: no create
    assert out == [Stop("7")]
    assert s.on_trial_exited("7", TrialExit.COMPLETED) == []
    assert s.on_trial_exited("6", TrialExit.COMPLETED) == [Shutdown(failure=False, reason="")]


def test_a_trial_ending_on_its_own_gets_no_replacement():
    s = halving(max_trials=3)
    s.initial_operations()
    assert s.on_trial_exited("1", TrialExit.COMPLETED) == []
    assert s.on_trial_exited("2", TrialExit.USER_REQUESTED_STOP) == [Shutdown(failure=False, reason="")]


def test_bigger_is_better_negates_the_metric():
    s = halving(smaller_is_better=False)
    s.initial_operations()
    assert s.on_validation_completed(*v("1", 0.5, 2)) == []
    out = s.on_validation_completed(*v("2", 0.7, 2))  # 0.7 is better now: it goes up
    assert out == []
    out = s.on_validation_completed(*v("1", 0.9, 4))
    assert out == []  # rung1 [-0.9]


def test_time_metric_falls_back_to_steps_completed_for_batches_only():
    s = halving()
    s.initial_operations()
    assert s.on_validation_completed("1", {"loss": 0.5}, 2) == []
    assert s.brackets[0].rungs[0] == [[0.5, "1"]]
    e = halving(max_time=8, time_metric="epochs")
    e.initial_operations()
    out = e.on_validation_completed("1", {"loss": 0.5}, 2)
    assert len(out) == 1 and isinstance(out[0], Shutdown) and out[0].failure
    assert "epochs" in out[0].reason


def test_legacy_max_length_uses_its_unit_as_the_time_metric():
    s = halving(max_time=None, time_metric=None, max_length={"epochs": 8})
    s.initial_operations()
    assert s.on_validation_completed("1", {"loss": 0.5, "epochs": 2}, 999) == []
    assert s.brackets[0].rungs[0] == [[0.5, "1"]]


def test_progress_formula():
    s = halving(max_trials=2)
    s.initial_operations()
    assert s.progress({}) == 0.0
    s.on_validation_completed(*v("1", 0.5, 2))
    assert s.progress({}) == pytest.approx(1 / (1.2 * 2))
    s.on_validation_completed(*v("2", 0.6, 2))  # stopped
    s.on_trial_exited("2", TrialExit.COMPLETED)
    assert s.progress({}) == pytest.approx(max(2 / 2.4, 1 / 2))
    s.on_validation_completed(*v("1", 0.6, 8))
    assert s.on_trial_exited("1", TrialExit.COMPLETED) == [Shutdown(failure=False, reason="")]
    assert s.progress({}) == 1.0


def test_all_errored_is_a_failure():
    s = halving(max_trials=2)
    s.initial_operations()
    s.on_trial_exited("1", TrialExit.ERRORED)
    out = s.on_trial_exited("2", TrialExit.ERRORED)
    assert out == [Shutdown(failure=True, reason="every trial failed")]


# -- tournament -------------------------------------------------------------------------------------

def adaptive(**over):
    searcher = {"name": "adaptive_asha", "metric": "loss", "max_trials": 64, "max_time": 100,
                "time_metric": "batches", "max_concurrent_trials": 8, **over}
    return build(expand({"hyperparameters": HP, "searcher": searcher}))


def test_adaptive_asha_starts_each_brackets_concurrency_in_bracket_order():
    s = adaptive()
    first = s.initial_operations()
    assert creates(first) == [str(i) for i in range(1, 9)]  # 3 + 3 + 2
    assert [s.owner[c.request_id] for c in first] == [0, 0, 0, 1, 1, 1, 2, 2]
    assert [b.units for b in s.brackets] == [[1, 6, 25, 100], [6, 25, 100], [25, 100]]
    assert s.milestones() == [1, 6, 25, 100]


def test_adaptive_asha_routes_events_to_the_owning_bracket():
    s = adaptive()
    s.initial_operations()
    # bracket 1 (rungs 6, 25, 100): trial 4 at 6 -> rung0; trial 5 worse -> stopped, new trial in bracket 1
    assert s.on_validation_completed(*v("4", 0.5, 6)) == []
    out = s.on_validation_completed(*v("5", 0.9, 6))
    assert out[0] == Stop("5") and s.owner[creates(out)[0]] == 1
    # bracket 2 (25, 100): a validation at 6 is below its first rung
    assert s.on_validation_completed(*v("7", 0.1, 6)) == []
    assert s.brackets[2].rungs == [[], []]


def test_adaptive_asha_aggressive_is_one_bracket():
    s = adaptive(mode="aggressive", max_concurrent_trials=0)
    assert len(s.brackets) == 1 and s.brackets[0].num_rungs == 4
    # mct 0: max(trials of the last bracket, d) = 64 per bracket; initial min(64, 64)
    assert len(s.initial_operations()) == 64


def test_adaptive_asha_runs_to_shutdown_with_every_trial_created():
    from searcher_helpers import Driver

    s = adaptive(max_trials=20)
    d = Driver(s, seed=3, p_fail=0, p_invalid=0, p_cancel=0).run()
    assert d.done
    assert len(d.created) == 20
    assert isinstance(d.actions[-1][-1], Shutdown) and not d.actions[-1][-1].failure
