"""determined.transformers.DetCallback: a Hugging Face Trainer (examples/determined/hf_trainer/, a tiny BERT)
reports metrics and checkpoints, resumes after a pause from its checkpoint, and runs an ASHA search."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import yaml

from integration.helpers import (
    REPO,
    checkpoints,
    create,
    first_trial,
    metrics,
    pause_after_first_checkpoint,
    wait_state,
)
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

EXAMPLE = REPO / "examples" / "determined" / "hf_trainer"


@pytest.fixture(scope="module")
def hf_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTestCluster]:
    """One cluster for the module's tests, with four slots: the ASHA search runs its four trials at once."""
    with LocalTestCluster(tmp_path_factory.mktemp("hf-trainer") / "home", slots=4) as c:
        yield c


def _config(name: str, args: dict[str, str], **hparams: object) -> str:
    """The example's config with `args` replacing the named command-line arguments and `hparams` added."""
    cfg = yaml.safe_load((EXAMPLE / name).read_text())
    for arg, value in args.items():
        cfg["entrypoint"] = re.sub(rf"{arg} \S+", f"{arg} {value}", cfg["entrypoint"])
    cfg["hyperparameters"].update(hparams)
    return yaml.safe_dump(cfg)


def _steps(c: LocalTestCluster, trial_id: int, group: str) -> list[int]:
    return [m["steps_completed"] for m in metrics(c, trial_id, group)]


def test_const_example_reports_metrics_and_checkpoints(hf_cluster: LocalTestCluster) -> None:
    c = hf_cluster
    exp_id = create(c, (EXAMPLE / "const.yaml").read_text(), EXAMPLE)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
    trial_id = d["trials"][0]["id"]
    train = metrics(c, trial_id, "training")
    assert [m["steps_completed"] for m in train] == [5, 10, 15, 20, 25, 30, 35, 40]
    assert "loss" in train[0]["metrics"] and train[0]["metrics"]["batches"] == 5
    assert not any(k == "epoch" or k.endswith("_runtime") for m in train for k in m["metrics"])
    vals = metrics(c, trial_id, "validation")
    assert [m["steps_completed"] for m in vals] == [10, 20, 30, 40]
    assert {"eval_loss", "eval_accuracy", "batches", "epochs"} <= set(vals[-1]["metrics"])
    ckpts = checkpoints(c, trial_id)
    assert sorted(ck["steps_completed"] for ck in ckpts) == [20, 40]
    last = max(ckpts, key=lambda ck: ck["steps_completed"])
    assert last["metadata"]["trial_id"] == trial_id
    assert "checkpoint-40/model.safetensors" in last["resources"] and "checkpoint-40/my_data.json" in last["resources"]
    assert not any(path.startswith("checkpoint-20/") for path in last["resources"])


def test_pause_then_activate_resumes_from_the_checkpoint(hf_cluster: LocalTestCluster) -> None:
    c = hf_cluster
    # a checkpoint every 10 steps and 0.25 s a step: 30 steps (7.5 s) to pause in after the first checkpoint
    exp_id = create(c, _config("const.yaml", {"--save_steps": "10"}, step_sleep=0.25), EXAMPLE)
    trial_id = first_trial(c, exp_id)
    stopped_at = pause_after_first_checkpoint(c, exp_id, trial_id)
    assert 10 <= stopped_at < 40
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
    assert len(c.client().get(f"/trials/{trial_id}")["runs"]) == 2
    train = metrics(c, trial_id, "training")
    second_run = max(m["trial_run_id"] for m in train)
    resumed = [m["metrics"]["batches"] for m in train if m["trial_run_id"] == second_run]
    # the Trainer's global step goes on from the checkpoint: no step-5 log of a fresh start in the second run
    assert resumed and min(resumed) > stopped_at and max(resumed) == 40, (stopped_at, resumed)
    assert max(ck["steps_completed"] for ck in checkpoints(c, trial_id)) == 40


def test_asha_search_completes(hf_cluster: LocalTestCluster) -> None:
    c = hf_cluster
    exp_id = create(c, (EXAMPLE / "adaptive_asha.yaml").read_text(), EXAMPLE)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=240)
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
    # a trial ASHA stops early is told to stop, saves a checkpoint, exits and ends COMPLETED, as in Determined
    assert len(d["trials"]) == 4 and {t["state"] for t in d["trials"]} == {"COMPLETED"}
    finished = [max(_steps(c, t["id"], "validation"), default=0) for t in d["trials"]]
    assert max(finished) == 40 and min(finished) >= 10, finished
    for t in d["trials"]:  # each trial's last checkpoint is at the step it stopped or finished at
        trained = max(_steps(c, t["id"], "training"))
        assert max(ck["steps_completed"] for ck in checkpoints(c, t["id"])) == trained
