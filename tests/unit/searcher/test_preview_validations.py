"""The preview simulates validations where `min_validation_period` puts them, and warns about rungs between them.

A stop-based ASHA trial trains toward the full length and is judged at a rung only at its first validation at or
past the rung, so a rung that falls between two validations is judged later than it says (issue 26: the digits
search example said 6 trials stop at 50 batches; validating every 100, they stopped at 100).
"""

from __future__ import annotations

import copy

from searcher_helpers import expand
from stalwart.searcher import preview, simulate
from stalwart.searcher.simulate import judged_at, rung_warnings, validation_every, validation_period

HP = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}
# one bracket of 2 rungs: judged at 50, full length 200 (as examples/digits/search.yaml)
ASHA = {"name": "adaptive_asha", "metric": "loss", "time_metric": "batches", "max_time": 200, "max_trials": 8,
        "max_concurrent_trials": 2, "max_rungs": 2, "divisor": 4, "mode": "aggressive"}


def asha(period: dict | None, **searcher) -> dict:
    raw = {"hyperparameters": HP, "searcher": {**ASHA, **searcher}}
    if period is not None:
        raw["min_validation_period"] = period
    return expand(copy.deepcopy(raw))


def test_rungs_between_validations_get_the_warning_and_the_table_shows_where_trials_stop():
    p = preview(asha({"batches": 100}))
    assert p.warnings == [
        "rung at 50 batches falls between validations (every 100 batches): trials will be judged at 100 batches "
        "instead; set min_validation_period to 50 batches (or a divisor of each rung)"]
    assert [length for _, length in p.rows] == [100, 200]  # the stopped trials trained to 100, not 50
    assert sum(n for n, _ in p.rows) == 8
    assert "Trials validate every 100 batches" in p.text()


def test_rungs_on_validations_get_no_warning():
    for period in ({"batches": 50}, {"batches": 25}, {"batches": 10}):
        p = preview(asha(period))
        assert p.warnings == [], period
        assert [length for _, length in p.rows] == [50, 200], period
    aligned = preview(asha({"batches": 50}))
    assert aligned.rows == preview(asha(None)).rows  # the rows the rung-by-rung assumption gave


def test_a_period_past_the_rung_judges_at_the_end_and_stops_nothing_early():
    p = preview(asha({"batches": 300}))
    assert p.rows == [(8, 200)]
    assert "trials will be judged at 200 batches instead" in p.warnings[0]


def test_no_period_or_another_unit_is_warned_and_the_preview_assumes_a_validation_on_every_rung():
    unset = preview(asha(None))
    assert len(unset.warnings) == 1 and unset.warnings[0].startswith(
        "rung at 50 batches needs a validation there, but min_validation_period is not set")
    assert "set min_validation_period to 50 batches" in unset.warnings[0]
    assert "assumed to validate at every rung" in unset.text()
    epochs = preview(asha({"epochs": 1}))
    assert "min_validation_period is in epochs" in epochs.warnings[0]
    assert [length for _, length in epochs.rows] == [50, 200]


def test_several_rungs_are_named_in_one_warning_with_a_period_that_divides_them_all():
    p = preview(asha({"epochs": 5}, time_metric="epochs", max_time=52, max_trials=64, max_rungs=5,
                     mode="standard", max_concurrent_trials=8))
    assert p.warnings == [
        "rungs at 3 and 13 epochs fall between validations (every 5 epochs): trials will be judged at 5 and 15 "
        "epochs instead; set min_validation_period to 1 epochs (or a divisor of each rung)"]
    assert {length for _, length in p.rows} == {5, 15, 52}


def test_searchers_that_judge_trials_at_the_end_of_what_they_asked_for_need_no_period():
    hyperband = expand({"hyperparameters": HP, "searcher": {
        "name": "hyperband", "metric": "loss", "max_time": 27, "time_metric": "batches", "max_concurrent_trials": 4}})
    promotion = asha(None, stop_once=False)
    random_search = expand({"hyperparameters": HP, "searcher": {
        "name": "random", "metric": "loss", "max_trials": 3, "max_length": {"batches": 10}}})
    for config in (hyperband, promotion, random_search):
        p = preview(config)
        assert p.warnings == [], config["searcher"]["name"]
    assert preview(random_search).validations == "" and preview(hyperband).validations == ""


def test_simulate_validates_on_multiples_of_the_period():
    result = simulate(asha({"batches": 100}), lambda hp, step: hp["lr"], max_workers=2, validation_period=100)
    steps = {s for t in result.trials.values() for _, s, _ in t.validations}
    assert steps == {100.0, 200.0}
    assert judged_at(50, 100) == 100 and judged_at(100, 100) == 100 and judged_at(101, 50) == 150


def test_warnings_and_period_helpers():
    assert validation_period({"min_validation_period": {"batches": 0}}) is None
    assert validation_period({}) is None
    period = validation_period({"min_validation_period": {"batches": 40}})
    assert period is not None and (period.unit, period.value) == ("batches", 40)
    assert rung_warnings([50, 200], {200}, period, "batches")[0].startswith("rung at 50 batches falls")
    assert rung_warnings([40, 200], {200}, period, "batches") == []
    assert rung_warnings([50, 200], {50, 200}, period, "batches") == []  # 50 ends a training: validated there
    assert rung_warnings([50, 200], {200}, period, "loss_steps") == []  # a time metric of the user's: unknown
    # the period simulate() takes: only in the searcher's own unit
    assert validation_every(asha({"batches": 40})) == 40
    assert validation_every(asha({"epochs": 1})) is None and validation_every(asha(None)) is None
