"""Hyperparameter searches end to end on a real cluster (digits example, two slots)."""

from __future__ import annotations

import itertools
import time

import pytest
import yaml

from integration.helpers import DIGITS, create, experiment, metrics, wait_state
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration


def _config(searcher: dict, hparams: dict, seed: int = 11) -> str:
    cfg = yaml.safe_load((DIGITS / "const.yaml").read_text())
    cfg["searcher"] = {"metric": "validation_accuracy", "smaller_is_better": False, **searcher}
    cfg["hyperparameters"].update(hparams)
    cfg["reproducibility"] = {"experiment_seed": seed}
    cfg["max_restarts"] = 0
    return yaml.safe_dump(cfg)


@pytest.fixture
def two_slots(tmp_path):
    with LocalTestCluster(tmp_path / "home", slots=2) as c:
        yield c


def test_grid_creates_exactly_the_product_of_counts(two_slots):
    c = two_slots
    config = _config({"name": "grid", "max_length": {"batches": 100}, "max_concurrent_trials": 2},
                     {"learning_rate": {"type": "double", "minval": 0.02, "maxval": 0.1, "count": 3},
                      "hidden": {"type": "categorical", "vals": [16, 32]}})
    exp_id = create(c, config)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=300)
    assert d["experiment"]["state"] == "COMPLETED"
    got = sorted((t["hparams"]["learning_rate"], t["hparams"]["hidden"]) for t in d["trials"])
    assert got == sorted(itertools.product([0.02, 0.06, 0.1], [16, 32]))
    assert all(t["state"] == "COMPLETED" for t in d["trials"])


ASHA = {"name": "adaptive_asha", "max_trials": 8, "max_concurrent_trials": 4, "time_metric": "batches",
        "max_time": 300, "max_rungs": 2, "mode": "aggressive"}
SPACE = {"learning_rate": {"type": "log", "minval": -3.5, "maxval": -0.5}}


def _trained(c, trial_id: int) -> int:
    vals = metrics(c, trial_id, "validation")
    return max((m["steps_completed"] for m in vals), default=0)


def test_asha_stops_weak_trials_early_and_the_best_reaches_full_length(two_slots):
    c = two_slots
    exp_id = create(c, _config(ASHA, SPACE))
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=400)
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
    trials = d["trials"]
    assert len(trials) == 8
    lengths = {t["id"]: _trained(c, t["id"]) for t in trials}
    assert any(v < 300 for v in lengths.values()), lengths  # some stopped at a rung
    best = max(trials, key=lambda t: t["latest_validation"]["metrics"]["validation_accuracy"])
    assert lengths[best["id"]] == 300
    assert d["experiment"]["best_validation"]["trial_id"] == best["id"]


def test_master_restart_mid_search_gives_the_same_trials(two_slots):
    # half the trials of the test above: two whole searches run here, one trial process at a time per slot
    c = two_slots
    small = {**ASHA, "max_trials": 4, "max_concurrent_trials": 2}
    first = create(c, _config(small, SPACE, seed=5))
    wait_state(c, first, {"COMPLETED", "ERROR"}, timeout=280)
    second = create(c, _config(small, SPACE, seed=5))
    c.wait_for(lambda: len(experiment(c, second)["trials"]) >= 3, what="the search to be under way")
    c.kill_master()
    time.sleep(1.0)
    c.start_master()
    d = wait_state(c, second, {"COMPLETED", "ERROR"}, timeout=280)
    assert d["experiment"]["state"] == "COMPLETED"
    assert len(d["trials"]) == 4

    def trial_set(exp_id):
        trials = experiment(c, exp_id)["trials"]
        return sorted((t["request_id"], round(t["hparams"]["learning_rate"], 12), t["seed"]) for t in trials)

    assert trial_set(second) == trial_set(first)
