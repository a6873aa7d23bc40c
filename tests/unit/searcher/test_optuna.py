"""optuna: space mapping, ask/tell flow, determinism, replay-based snapshot/restore, missing package."""

import builtins

import pytest

from searcher_helpers import build, expand, replay, roundtrip
from stalwart.api.errors import ConfigError
from stalwart.searcher import Create, Shutdown, TrialExit
from stalwart.searcher.optuna_search import OptunaSearch

HP = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
    "width": {"type": "int", "minval": 8, "maxval": 64},
    "drop": {"type": "double", "minval": 0.0, "maxval": 0.5},
    "act": {"type": "categorical", "vals": ["relu", {"name": "gelu"}, [1, 2]]},
    "model": {"depth": {"type": "int", "minval": 1, "maxval": 4}, "fixed": 3},
}


def optuna_search(sampler="tpe", **over):
    searcher = {"name": "optuna", "metric": "loss", "max_trials": 30, "max_concurrent_trials": 2,
                "sampler": sampler, "max_length": {"batches": 100}, **over}
    return build(expand({"hyperparameters": HP, "searcher": searcher}))


def objective(hp):
    return abs(hp["drop"] - 0.25) + abs(hp["width"] - 32) / 100 + hp["model"]["depth"] / 10


def drive(search, n_exits):
    """Answer each created trial with a validation and a COMPLETED exit, oldest first."""
    actions = search.initial_operations()
    live = [a for a in actions if isinstance(a, Create)]
    events = []
    for _ in range(n_exits):
        trial = live.pop(0)
        events.append(("validation", trial.request_id, {"loss": objective(trial.hparams)}, 100))
        search.on_validation_completed(trial.request_id, {"loss": objective(trial.hparams)}, 100)
        events.append(("exit", trial.request_id, TrialExit.COMPLETED))
        out = search.on_trial_exited(trial.request_id, TrialExit.COMPLETED)
        live += [a for a in out if isinstance(a, Create)]
    return live, events


def test_space_maps_to_optuna_distributions_and_back():
    s = optuna_search()
    d = s.model.distributions
    assert set(d) == {"lr", "width", "drop", "act", "model.depth"}
    assert d["lr"].log and d["lr"].low == pytest.approx(1e-4) and d["lr"].high == pytest.approx(0.1)
    assert (d["width"].low, d["width"].high) == (8, 64)
    assert list(d["act"].choices) == [0, 1, 2]
    for create in s.initial_operations():
        hp = create.hparams
        assert 1e-4 <= hp["lr"] <= 0.1 and 8 <= hp["width"] <= 64 and isinstance(hp["width"], int)
        assert hp["act"] in ("relu", {"name": "gelu"}, [1, 2])
        assert hp["model"]["fixed"] == 3 and 1 <= hp["model"]["depth"] <= 4
        assert create.length == 100


@pytest.mark.parametrize("sampler", ["tpe", "random", "cmaes"])
def test_same_seed_same_trials_and_the_search_finishes(sampler):
    a, _ = drive(optuna_search(sampler), 12)
    b, _ = drive(optuna_search(sampler), 12)
    assert [c.hparams for c in a] == [c.hparams for c in b]
    assert [c.seed for c in a] == [c.seed for c in b]
    s = optuna_search(sampler, max_trials=4)
    live, _ = drive(s, 3)
    assert len(live) == 1
    s.on_validation_completed(live[0].request_id, {"loss": 0.5}, 100)
    assert s.on_trial_exited(live[0].request_id, TrialExit.COMPLETED) == [Shutdown(failure=False, reason="")]
    states = [t.state.name for t in s.model.study.trials]
    assert states == ["COMPLETE"] * 4


def test_tpe_uses_the_history():
    s = optuna_search(max_trials=60)
    live, _ = drive(s, 40)
    best = min(t.value for t in s.model.study.trials if t.value is not None)
    assert best < 0.35  # far better than a typical random point of this objective


def test_snapshot_restore_gives_the_same_next_trials():
    a = optuna_search()
    live, events = drive(a, 15)
    snap = roundtrip(a.snapshot())
    b = optuna_search()
    b.restore(snap)
    assert b.initial_operations() == []
    trial = live[0]
    out_a = [a.on_validation_completed(trial.request_id, {"loss": 0.2}, 100),
             a.on_trial_exited(trial.request_id, TrialExit.COMPLETED)]
    out_b = [b.on_validation_completed(trial.request_id, {"loss": 0.2}, 100),
             b.on_trial_exited(trial.request_id, TrialExit.COMPLETED)]
    assert out_a == out_b and any(isinstance(x, Create) for x in out_a[1])
    # and a fresh searcher replaying the whole event stream agrees too
    c = optuna_search()
    c.initial_operations()
    replay(c, events)
    assert c.snapshot()["state"]["records"][:16] == snap["state"]["records"][:16]


def test_failed_and_invalid_trials_are_told_fail_and_invalid_is_replaced():
    s = optuna_search(max_trials=3, max_concurrent_trials=0)
    s.initial_operations()
    out = s.on_trial_exited("1", TrialExit.INVALID_HP)
    assert [a.request_id for a in out if isinstance(a, Create)] == ["4"]
    s.on_trial_exited("2", TrialExit.ERRORED)
    s.on_trial_exited("3", TrialExit.COMPLETED)  # no metric reported: FAIL
    assert [t.state.name for t in s.model.study.trials] == ["FAIL", "FAIL", "FAIL", "RUNNING"]


def test_bigger_is_better_maximises():
    s = optuna_search(smaller_is_better=False)
    assert s.model.study.direction.name == "MAXIMIZE"


def test_a_bad_sampler_and_a_missing_optuna_are_clear_config_errors(monkeypatch):
    with pytest.raises(ConfigError, match="sampler"):
        optuna_search("nope")
    real_import = builtins.__import__

    def no_optuna(name, *args, **kwargs):
        if name == "optuna" or name.startswith("optuna."):
            raise ImportError("No module named 'optuna'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_optuna)
    with pytest.raises(ConfigError) as info:
        optuna_search()
    assert "optional Optuna package" in info.value.message
    assert isinstance(OptunaSearch, type)
