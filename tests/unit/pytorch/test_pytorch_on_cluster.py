"""On a real local cluster: a Trial-class experiment run through the legacy harness, metrics, checkpoints, pause."""

from __future__ import annotations

import pathlib
import shutil
import textwrap

import pytest

from integration.helpers import checkpoints, create, experiment, first_trial, live_run, metrics, wait_state

pytestmark = pytest.mark.integration

HERE = pathlib.Path(__file__).resolve().parent
ENTRYPOINT = "python3 -m stalwart.harness.pytorch.legacy pt_trials:DigitsTrial"


def config(**hparams) -> str:
    hp = {"global_batch_size": 32, "lr": 0.1, "hidden": 32, "dropout": 0.1, **hparams}
    return textwrap.dedent(f'''\
        name: pytorch-trial
        entrypoint: {ENTRYPOINT}
        hyperparameters: {hp}
        searcher: {{name: single, metric: accuracy, smaller_is_better: false, max_length: {{batches: 90}}}}
        min_validation_period: {{batches: 30}}
        scheduling_unit: 10
        max_restarts: 0
        reproducibility: {{experiment_seed: 5}}
        ''')


@pytest.fixture
def context_dir(tmp_path):
    d = tmp_path / "ctx"
    d.mkdir()
    shutil.copy(HERE / "pt_trials.py", d / "pt_trials.py")
    return d


def test_trial_class_experiment_completes(cluster, context_dir):
    exp_id = create(cluster, config(), context_dir)
    d = wait_state(cluster, exp_id, {"COMPLETED", "ERROR", "CANCELED"})
    assert d["experiment"]["state"] == "COMPLETED", cluster.log("agent-0.log")[-3000:]
    trial_id = d["trials"][0]["id"]
    validations = metrics(cluster, trial_id, "validation")
    assert [m["steps_completed"] for m in validations] == [30, 60, 90]
    assert validations[-1]["metrics"]["accuracy"] > 0.8
    assert validations[-1]["metrics"]["epochs"] == 2 and validations[-1]["metrics"]["batches"] == 90
    training = metrics(cluster, trial_id, "training")
    assert [m["steps_completed"] for m in training] == [10, 20, 30, 40, 50, 60, 70, 80, 90]
    steps = sorted(ck["steps_completed"] for ck in checkpoints(cluster, trial_id))
    assert steps and steps[-1] == 90  # 'best' checkpoints after improving validations, and the final one
    assert d["experiment"]["progress"] == 1.0


def test_pause_and_activate_resume_from_the_checkpoint(cluster, context_dir):
    exp_id = create(cluster, config(batch_sleep=0.05), context_dir)
    trial_id = first_trial(cluster, exp_id)
    cluster.wait_for(lambda: metrics(cluster, trial_id, "training"), what="a first training report")
    cluster.cli("e", "pause", str(exp_id), check=True)
    cluster.wait_for(lambda: experiment(cluster, exp_id)["trials"][0]["state"] == "PAUSED"
                     and live_run(cluster, trial_id) is None, what="the trial to stop")
    paused_at = max(ck["steps_completed"] for ck in checkpoints(cluster, trial_id))
    assert 0 < paused_at < 90 and paused_at % 10 == 0  # preemption is checked every scheduling_unit
    cluster.cli("e", "activate", str(exp_id), check=True)
    d = wait_state(cluster, exp_id, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED", cluster.log("agent-0.log")[-3000:]
    runs = cluster.client().get(f"/trials/{trial_id}")["runs"]
    assert [r["exit_reason"] for r in runs] == ["PREEMPTED", "COMPLETED"]
    second = [m["steps_completed"] for m in metrics(cluster, trial_id, "training") if m["trial_run_id"] == 2]
    assert second and min(second) == paused_at + 10
