"""A Determined 0.37-style Trial with its own TrialController (`trial_controller_class`) runs on a real cluster:
its controller is driven through RUN_STEP / COMPUTE_VALIDATION_METRICS / CHECKPOINT_MODEL workloads, and
its metrics and checkpoints reach the master. The model definition is trial_controller/model_def.py."""

from __future__ import annotations

import pathlib

import pytest

from integration.helpers import (
    checkpoints,
    create,
    first_trial,
    logs,
    metrics,
    pause_after_first_checkpoint,
    wait_state,
)
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

CONTEXT = pathlib.Path(__file__).with_name("trial_controller")
CONFIG = """
name: custom-trial-controller
entrypoint: model_def:ApproachTrial
hyperparameters:
  global_batch_size: 4
  rate: 0.5
  step_sleep: {sleep}
  target: {target}
searcher:
  name: {searcher}
  metric: validation_loss
  smaller_is_better: true
  max_length:
    batches: {length}
min_validation_period:
  batches: 3
scheduling_unit: 2
max_restarts: 0
"""


def test_custom_controller_trains_validates_and_checkpoints_under_grid_search(cluster) -> None:
    c = cluster
    config = CONFIG.format(sleep=0, target="{type: categorical, vals: [1.0, 3.0]}", searcher="grid", length=6)
    d = wait_state(c, create(c, config, CONTEXT), {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED", d
    assert sorted(t["hparams"]["target"] for t in d["trials"]) == [1.0, 3.0]
    for trial in d["trials"]:
        assert trial["state"] == "COMPLETED"
        training = metrics(c, trial["id"], "training")
        assert [p["steps_completed"] for p in training] == [2, 3, 5, 6]  # scheduling_unit 2, validation at 3
        assert len(training[0]["metrics"]["batch_metrics"]) == 2
        validation = metrics(c, trial["id"], "validation")
        assert [p["steps_completed"] for p in validation] == [3, 6]
        target = trial["hparams"]["target"]
        assert validation[-1]["metrics"]["validation_loss"] == pytest.approx((target - target * (1 - 0.5**6)) ** 2)
        saved = checkpoints(c, trial["id"])
        assert saved and saved[-1]["metadata"]["steps_completed"] == 6
        assert {"weight.json", "workload_sequencer.json"} <= set(saved[-1]["resources"])
        lines = [e["log"] for e in logs(c, trial["id"])]
        assert any("IMPORTED 12 EnvContext ApproachContext" in line for line in lines), lines
        assert any(f"PRE_EXECUTE {trial['id']} True" in line for line in lines), lines


def test_custom_controller_resumes_from_its_checkpoint_after_a_pause(cluster) -> None:
    c = cluster
    config = CONFIG.format(sleep=0.25, target=2.0, searcher="single", length=40)
    exp_id = create(c, config, CONTEXT)
    trial_id = first_trial(c, exp_id)
    pause_after_first_checkpoint(c, exp_id, trial_id)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED", d
    lines = [e["log"] for e in logs(c, trial_id)]
    restored = [int(line.split("RESTORED", 1)[1].split()[0]) for line in lines if "RESTORED" in line]
    assert restored and 0 < restored[0] < 40, lines
    steps = [p["steps_completed"] for p in metrics(c, trial_id, "training")]
    assert steps == sorted(set(steps)) and steps[-1] == 40
    assert metrics(c, trial_id, "validation")[-1]["steps_completed"] == 40


def test_custom_controller_runs_on_two_workers_with_the_chiefs_workloads(tmp_path) -> None:
    config = CONFIG.format(sleep=0, target=1.0, searcher="single", length=6) + "resources:\n  slots_per_trial: 2\n"
    with LocalTestCluster(tmp_path / "home", slots=2) as c:
        d = wait_state(c, create(c, config, CONTEXT), {"COMPLETED", "ERROR"})
        trial_id = d["trials"][0]["id"]
        lines = [e["log"] for e in logs(c, trial_id)]
        assert d["experiment"]["state"] == "COMPLETED", lines
        assert [p["steps_completed"] for p in metrics(c, trial_id, "validation")] == [3, 6]
    done = sorted(line.split("WORKLOADS ", 1)[1] for line in lines if "WORKLOADS " in line)
    assert done == ["rank=0 done=8", "rank=1 done=8"], lines
