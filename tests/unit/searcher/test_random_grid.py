"""random and grid: concurrency, INVALID_HP replacement, grid order, shutdown, progress."""

from searcher_helpers import build, expand
from stalwart.searcher import Create, Shutdown, TrialExit
from stalwart.searcher.space import HParamSpace

HP = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}, "n": {"type": "int", "minval": 1, "maxval": 4}}


def random_search(max_trials=5, mct=2, **extra):
    return build(expand({"hyperparameters": HP, "searcher": {
        "name": "random", "metric": "loss", "max_trials": max_trials, "max_concurrent_trials": mct, **extra}}))


def ids(actions):
    return [a.request_id for a in actions if isinstance(a, Create)]


def test_random_keeps_at_most_mct_alive_and_replaces_exits_until_max_trials():
    s = random_search(max_trials=5, mct=2)
    assert ids(s.initial_operations()) == ["1", "2"]
    assert s.initial_operations() == []
    assert ids(s.on_trial_exited("1", TrialExit.COMPLETED)) == ["3"]
    assert ids(s.on_trial_exited("2", TrialExit.ERRORED)) == ["4"]
    assert ids(s.on_trial_exited("3", TrialExit.COMPLETED)) == ["5"]
    assert s.on_trial_exited("4", TrialExit.COMPLETED) == []  # 5 created: no more
    assert s.on_trial_exited("5", TrialExit.COMPLETED) == [Shutdown(failure=False, reason="")]


def test_random_replaces_invalid_hp_without_counting_it():
    s = random_search(max_trials=3, mct=0)
    assert ids(s.initial_operations()) == ["1", "2", "3"]  # mct 0: all at once
    assert ids(s.on_trial_exited("2", TrialExit.INVALID_HP)) == ["4"]
    assert ids(s.on_trial_exited("4", TrialExit.INVALID_HP)) == ["5"]
    assert s.on_trial_exited("1", TrialExit.COMPLETED) == []
    assert s.on_trial_exited("3", TrialExit.COMPLETED) == []
    assert s.on_trial_exited("5", TrialExit.COMPLETED) == [Shutdown(failure=False, reason="")]


def test_random_creates_have_seeded_hparams_seeds_and_the_length():
    s = random_search(max_trials=2, mct=2, max_length={"batches": 300})
    creates = s.initial_operations()
    assert [c.length for c in creates] == [300, 300]
    assert creates == random_search(max_trials=2, mct=2, max_length={"batches": 300}).initial_operations()
    assert all(0 <= c.hparams["lr"] <= 1 and c.hparams["n"] in (1, 2, 3, 4) for c in creates)
    assert all(0 <= c.seed < 2**31 for c in creates)
    assert creates[0].seed != creates[1].seed


def test_random_fails_only_when_every_trial_errored():
    s = random_search(max_trials=2, mct=2)
    s.initial_operations()
    s.on_trial_exited("1", TrialExit.ERRORED)
    assert s.on_trial_exited("2", TrialExit.ERRORED) == [Shutdown(failure=True, reason="every trial failed")]


def test_random_progress_counts_exited_trials_as_done():
    s = random_search(max_trials=4, mct=2)
    s.initial_operations()
    assert s.progress({"1": 0.5, "2": 0.5}) == 0.25
    s.on_trial_exited("1", TrialExit.COMPLETED)
    assert s.progress({"1": 1.0, "2": 0.5, "3": 0.0}) == 0.375


GRID_HP = {
    "a": {"type": "int", "minval": 0, "maxval": 2, "count": 5},  # clipped to 3 points
    "g": {"b": {"type": "categorical", "vals": ["x", "y"]}},
    "c": 1,
}


def grid_search(mct=2):
    return build(expand({"hyperparameters": GRID_HP, "searcher": {
        "name": "grid", "metric": "loss", "max_concurrent_trials": mct}}))


def test_grid_takes_points_from_the_end_reverse_lexicographic():
    s = grid_search(mct=0)
    creates = s.initial_operations()
    assert len(creates) == 3 * 2
    expected = list(reversed(HParamSpace(expand({"hyperparameters": GRID_HP, "searcher": {
        "name": "grid", "metric": "loss"}})["hyperparameters"]).grid()))
    assert [c.hparams for c in creates] == expected
    assert [(c.hparams["a"], c.hparams["g"]["b"]) for c in creates] == [
        (2, "y"), (2, "x"), (1, "y"), (1, "x"), (0, "y"), (0, "x")]
    assert all(c.hparams["c"] == 1 for c in creates)


def test_grid_concurrency_and_no_retry_on_invalid_hp():
    s = grid_search(mct=2)
    first = s.initial_operations()
    assert ids(first) == ["1", "2"]
    seen = [c.hparams for c in first]
    rid = 2
    for exited in range(1, 5):
        how = TrialExit.INVALID_HP if exited == 1 else TrialExit.COMPLETED
        new = s.on_trial_exited(str(exited), how)
        rid += 1
        assert ids(new) == [str(rid)]
        seen += [c.hparams for c in new]
    assert s.on_trial_exited("5", TrialExit.COMPLETED) == []
    assert s.on_trial_exited("6", TrialExit.COMPLETED) == [Shutdown(failure=False, reason="")]
    assert len({repr(h) for h in seen}) == 6  # every point once, the invalid one not retried
