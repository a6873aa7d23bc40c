"""The parts of the SDK's Determined shape that need no master: log filters (`Trial.iter_logs`), Determined's
deprecated metric classes, trial sorting by duration, the best checkpoint of each trial, and the names of
`list_experiments`' sort and order."""

from __future__ import annotations

import pytest

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.trials import LogEntry
from stalwart.experimental import client
from stalwart.experimental._experiment_list import _order, _sort_key
from stalwart.experimental._logs import LocalFilters, LogLevel, epoch_seconds, levels_from
from stalwart.experimental.checkpoint import Checkpoint
from stalwart.experimental.experiment import _best_of_each_trial
from stalwart.experimental.trial import Trial, TrialSortBy, sort_trials


def test_min_level_asks_for_that_level_and_those_above() -> None:
    assert levels_from(None, LogLevel.WARNING) == ["WARNING", "ERROR", "CRITICAL"]
    assert levels_from(None, "error") == ["ERROR", "CRITICAL"]
    assert levels_from(["INFO", "ERROR"], "WARNING") == ["ERROR"]
    assert levels_from(["INFO"], None) == ["INFO"]
    with pytest.raises(InvalidRequest, match="min_level: expected one of TRACE"):
        levels_from(None, "LOUD")


def test_local_filters_keep_only_matching_lines() -> None:
    line = LogEntry(id=1, log="x", timestamp=100.0, stdtype="stdout", rank_id=0, source="trial")
    assert not LocalFilters().any and LocalFilters().keeps(line)
    assert LocalFilters(rank_ids=[0], stdtypes=["stdout"], sources=["trial"], before=101.0).keeps(line)
    assert not LocalFilters(rank_ids=[1]).keeps(line)
    assert not LocalFilters(stdtypes=["stderr"]).keeps(line)
    assert not LocalFilters(before=100.0).keeps(line)
    assert epoch_seconds("t", "1970-01-01T00:01:40Z") == 100.0 and epoch_seconds("t", 5) == 5.0
    with pytest.raises(InvalidRequest, match="t: expected epoch seconds or an ISO 8601 time"):
        epoch_seconds("t", "yesterday")


def test_determineds_deprecated_metric_classes_are_trial_metrics_of_their_group() -> None:
    report = client.TrainingMetrics(total_batches=7, trial_id=1, trial_run_id=2, end_time=None, metrics={"l": 1})
    assert isinstance(report, client.TrialMetrics) and report.group == "training"
    assert report.steps_completed == report.total_batches == 7
    assert client.ValidationMetrics(trial_id=1, trial_run_id=2, steps_completed=3, end_time=None,
                                    metrics={}).group == "validation"


def _trial(trial_id: int, created: float, ended: float | None) -> Trial:
    trial = Trial(None, trial_id)  # type: ignore[arg-type]  # sorting reads no master
    trial.created_at, trial.ended_at = created, ended
    return trial


def test_trials_sort_by_duration_with_unfinished_ones_last() -> None:
    trials = [_trial(1, 0.0, 10.0), _trial(2, 0.0, None), _trial(3, 5.0, 7.0)]
    assert [t.id for t in sort_trials(trials, TrialSortBy.DURATION, client.TrialOrderBy.ASCENDING)] == [3, 1, 2]


def test_top_n_keeps_the_best_checkpoint_of_each_trial() -> None:
    ranked = []
    for uuid, trial_id in (("a", 1), ("b", 1), ("c", 2), ("d", 1), ("e", 3)):
        ckpt = Checkpoint(None, uuid)  # type: ignore[arg-type]  # ranking reads no master
        ckpt.trial_id = trial_id
        ranked.append(ckpt)
    assert [c.uuid for c in _best_of_each_trial(ranked)] == ["a", "c", "e"]


def test_list_experiments_takes_determineds_sort_and_order_and_stalwarts_names() -> None:
    assert _sort_key(client.ExperimentSortBy.START_TIME) == "start_time" and _sort_key("name") == "name"
    assert _sort_key(None) == "id" and _order(None) == "desc"
    assert _order(client.ExperimentOrderBy.ASCENDING) == "asc" and _order("desc") == "desc"
    with pytest.raises(InvalidRequest, match="sort_by: expected an ExperimentSortBy"):
        _sort_key("USER")
    with pytest.raises(InvalidRequest, match="order_by: expected OrderBy.ASC or OrderBy.DESC"):
        _order("up")
