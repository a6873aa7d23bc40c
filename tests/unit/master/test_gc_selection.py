"""The checkpoint GC policy's selection (master/experiments/gc_selection): the union of the experiment's best, each
trial's best and each trial's latest, with why each checkpoint is kept; the same answer whatever order the rows
come in (a dry run lists exactly what applying then deletes)."""

from __future__ import annotations

import random

from stalwart.master.experiments.gc_selection import Ckpt, Policy, best, keep_reasons, latest, to_delete


def ckpt(trial: int, steps: int, metric: float | None, uuid: str | None = None) -> Ckpt:
    return {"uuid": uuid or f"t{trial}-{steps}", "trial_id": trial, "steps_completed": steps,
            "report_time": 1000.0 + steps, "metric": metric}


# two trials, a loss at each checkpoint (smaller is better); trial 2 has the experiment's best two
SEARCH = [
    ckpt(1, 10, 0.9), ckpt(1, 20, 0.5), ckpt(1, 30, 0.7),
    ckpt(2, 10, 0.4), ckpt(2, 20, 0.3), ckpt(2, 30, 0.6),
]


def kept(ckpts: list[Ckpt], policy: Policy, smaller: bool = True) -> dict[str, str]:
    return keep_reasons(ckpts, policy, smaller)


def test_the_union_of_experiment_best_trial_best_and_trial_latest_with_reasons() -> None:
    assert kept(SEARCH, Policy(2, 1, 1)) == {
        "t2-20": "best of the experiment; best of trial 2",
        "t2-10": "best of the experiment (2nd)",
        "t1-20": "best of trial 1",
        "t1-30": "latest of trial 1",
        "t2-30": "latest of trial 2",
    }
    assert [c["uuid"] for c in to_delete(SEARCH, kept(SEARCH, Policy(2, 1, 1)))] == ["t1-10"]


def test_each_number_alone_keeps_only_its_own_set() -> None:
    assert set(kept(SEARCH, Policy(1, 0, 0))) == {"t2-20"}
    assert set(kept(SEARCH, Policy(0, 2, 0))) == {"t1-20", "t1-30", "t2-20", "t2-10"}
    assert set(kept(SEARCH, Policy(0, 0, 2))) == {"t1-30", "t1-20", "t2-30", "t2-20"}
    assert kept(SEARCH, Policy(0, 0, 0)) == {}
    assert [c["uuid"] for c in to_delete(SEARCH, {})] == ["t1-10", "t1-20", "t1-30", "t2-10", "t2-20", "t2-30"]


def test_numbers_beyond_what_there_is_keep_everything() -> None:
    assert set(kept(SEARCH, Policy(100, 100, 100))) == {c["uuid"] for c in SEARCH}


def test_larger_is_better_turns_the_ranking_around() -> None:
    assert [c["uuid"] for c in best(SEARCH, 2, smaller_is_better=False)] == ["t1-10", "t1-30"]
    assert set(kept(SEARCH, Policy(1, 0, 0), smaller=False)) == {"t1-10"}


def test_a_checkpoint_without_a_number_is_never_best_but_may_be_latest() -> None:
    rows = [ckpt(1, 10, 0.5), ckpt(1, 20, None), ckpt(1, 30, float("nan")), ckpt(1, 40, None)]
    assert [c["uuid"] for c in best(rows, 5, smaller_is_better=True)] == ["t1-10"]
    assert kept(rows, Policy(0, 1, 1)) == {"t1-10": "best of trial 1", "t1-40": "latest of trial 1"}


def test_latest_is_by_steps_then_report_time() -> None:
    rows = [ckpt(1, 10, None, "a"), ckpt(1, 10, None, "b"), ckpt(1, 5, None, "c")]
    rows[0]["report_time"] = 2000.0  # "a" reported after "b" at the same step
    assert [c["uuid"] for c in latest(rows, 3)] == ["a", "b", "c"]


def test_ties_are_broken_the_same_way_whatever_order_the_rows_come_in() -> None:
    rows = [ckpt(trial, steps, 0.5) for trial in (3, 1, 2) for steps in (20, 10)]
    expected = kept(rows, Policy(2, 1, 1))
    assert [u for u, why in expected.items() if "experiment" in why] == ["t1-10", "t1-20"]
    for seed in range(20):
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        assert kept(shuffled, Policy(2, 1, 1)) == expected
        assert to_delete(shuffled, expected) == to_delete(rows, expected)


def test_a_bool_is_not_a_metric() -> None:
    assert best([ckpt(1, 10, True)], 1, smaller_is_better=True) == []  # a report of true is no ranking
