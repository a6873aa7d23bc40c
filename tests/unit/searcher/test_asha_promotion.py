"""Promotion-based ASHA (asha_promotion, or stop_once: false): pauses, promotions, close-out."""

from searcher_helpers import Driver, build, expand
from stalwart.searcher import Create, Pause, Resume, Shutdown, Stop, TrialExit
from stalwart.searcher.asha import Bracket
from stalwart.searcher.asha_promotion import PromotionBracket

HP = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}


def v(rid, loss, t):
    return rid, {"loss": loss, "batches": t}, t


def promotion(name="asha_promotion", **over):
    searcher = {"name": name, "metric": "loss", "num_rungs": 3, "divisor": 2, "max_trials": 4,
                "max_concurrent_trials": 2, "max_time": 8, "time_metric": "batches", **over}
    if name != "async_halving":
        searcher.pop("num_rungs")
    return build(expand({"hyperparameters": HP, "searcher": searcher}))


def test_stop_once_false_selects_promotions_and_absent_or_true_does_not():
    assert isinstance(promotion("async_halving", stop_once=False).brackets[0], PromotionBracket)
    assert isinstance(promotion("adaptive_asha", stop_once=False).brackets[0], PromotionBracket)
    assert isinstance(promotion("async_halving").brackets[0], Bracket)
    assert isinstance(promotion("async_halving", stop_once=True).brackets[0], Bracket)
    assert isinstance(promotion("asha_promotion", bracket_rungs=[3]).brackets[0], PromotionBracket)


def test_promotions_pauses_and_close_out_by_hand():
    s = promotion("async_halving", stop_once=False)  # rungs [2, 4, 8], d 2, max_trials 4, 2 workers
    first = s.initial_operations()
    assert [(c.request_id, c.length) for c in first] == [("1", 2), ("2", 2)]  # train to rung 0 only
    # 1: n=0 -> old 0, new floor(1/2)=0: not promoted; paused; its worker takes a new trial
    out = s.on_validation_completed(*v("1", 0.5, 2))
    assert out[0] == Pause("1") and [a.request_id for a in out[1:] if isinstance(a, Create)] == ["3"]
    assert out[1].length == 2
    # 2: n=1 -> new floor(2/2)=1, lands at 0 < 1: promoted at once
    assert s.on_validation_completed(*v("2", 0.3, 2)) == [Pause("2"), Resume("2", 4)]
    # 3: n=2 -> old 1, new 1, position 2: nothing; a new trial takes the worker
    out = s.on_validation_completed(*v("3", 0.9, 2))
    assert out[0] == Pause("3") and isinstance(out[1], Create) and out[1].request_id == "4"
    # 4: n=3 -> old 1, new 2, position 0 < 2: promoted; all 4 created and nothing trains toward
    # rung 0 any more, so rung 0's unpromoted trials (1, 3) are closed
    assert s.on_validation_completed(*v("4", 0.1, 2)) == [Pause("4"), Resume("4", 4), Stop("1"), Stop("3")]
    # rung 1: 2 reports first (not promoted: new floor(1/2)=0), then 4 is promoted; rung 1 closes
    assert s.on_validation_completed(*v("2", 0.25, 4)) == [Pause("2")]
    assert s.on_validation_completed(*v("4", 0.05, 4)) == [Pause("4"), Resume("4", 8), Stop("2")]
    # the last rung: finished
    assert s.on_validation_completed(*v("4", 0.01, 8)) == [Stop("4")]
    assert s.on_trial_exited("1", TrialExit.COMPLETED) == []  # a closed paused trial: ignored
    assert s.on_trial_exited("4", TrialExit.COMPLETED) == [Shutdown(failure=False, reason="")]


def test_the_promotion_of_a_waiting_trial_when_the_rung_grows():
    s = promotion(max_trials=6, max_concurrent_trials=1, bracket_rungs=[3])  # one bracket of 3 rungs
    assert s.brackets[0].units == [2, 4, 8]
    s.initial_operations()  # 1
    out = s.on_validation_completed(*v("1", 0.2, 2))  # not promoted (new 0); new trial 2
    assert out[0] == Pause("1") and out[1].request_id == "2"
    # 2 is worse; n=1 -> new 1 > old 0 and position 1 >= 1: the best unpromoted (1) goes up instead
    out = s.on_validation_completed(*v("2", 0.8, 2))
    assert out == [Pause("2"), Resume("1", 4)]


def test_an_errored_trial_counts_as_the_worst_result_and_frees_its_worker():
    s = promotion("async_halving", stop_once=False)
    s.initial_operations()
    out = s.on_trial_exited("1", TrialExit.ERRORED)
    assert [a.request_id for a in out if isinstance(a, Create)] == ["3"]
    bracket = s.brackets[0]
    assert bracket.rungs[0][0][1] == "1"


def test_invalid_hp_is_replaced_and_not_counted():
    s = promotion("async_halving", stop_once=False)
    s.initial_operations()
    out = s.on_trial_exited("2", TrialExit.INVALID_HP)
    assert [a.request_id for a in out if isinstance(a, Create)] == ["3"]
    assert s.brackets[0].valid_trials == 2


def test_a_paused_run_exit_is_not_an_exit():
    s = promotion("async_halving", stop_once=False)
    s.initial_operations()
    s.on_validation_completed(*v("1", 0.5, 2))
    assert s.on_trial_exited("1", TrialExit.COMPLETED) == []
    assert s.brackets[0].status["1"] == "paused"


def test_promotion_asha_runs_to_shutdown_under_random_events():
    for seed in range(20):
        s = promotion(max_trials=12, max_concurrent_trials=3, divisor=2, max_time=16)
        d = Driver(s, seed=seed).run()
        assert d.done, seed
        assert isinstance(d.actions[-1][-1], Shutdown)
        for rid, trial in s.brackets[0].status.items():
            assert trial == "closed", (seed, rid)
