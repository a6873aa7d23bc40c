"""determined.keras on a cluster: Determined 0.38's DeterminedCallback script and 0.37's TFKerasTrial
(examples/determined/keras_callback, examples/determined/tf_keras_trial) train, report, checkpoint, resume
after a pause from their checkpoint, and run under ASHA."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from integration.helpers import (
    REPO,
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

EXAMPLES = REPO / "examples" / "determined"
CALLBACK = EXAMPLES / "keras_callback"
TRIAL = EXAMPLES / "tf_keras_trial"


@pytest.fixture(scope="module")
def keras_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTestCluster]:
    with LocalTestCluster(tmp_path_factory.mktemp("keras") / "home", slots=2) as c:
        yield c


def _steps(c: LocalTestCluster, trial_id: int, group: str) -> list[int]:
    return [m["steps_completed"] for m in metrics(c, trial_id, group)]


def _completed(c: LocalTestCluster, exp_id: int) -> dict:
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=240)
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
    return d


def _pause_after_first_checkpoint(c: LocalTestCluster, exp_id: int, trial_id: int, total: int) -> int:
    """Pause once the first checkpoint is in and resume. The configs' batch_sleep leaves the pause 10 s or more to
    land before the last batch (a run of 5 s finished first on a loaded CI machine)."""
    stopped_at = pause_after_first_checkpoint(c, exp_id, trial_id, pause_timeout=60)
    assert 0 < stopped_at < total
    return stopped_at


def test_callback_example_pauses_resumes_from_its_checkpoint_and_completes(keras_cluster):
    c = keras_cluster
    config = (CALLBACK / "const.yaml").read_text().replace("batch_sleep: 0.0", "batch_sleep: 0.1")
    exp_id = create(c, config, CALLBACK)
    trial_id = first_trial(c, exp_id)
    _pause_after_first_checkpoint(c, exp_id, trial_id, 128)
    _completed(c, exp_id)
    assert len(c.client().get(f"/trials/{trial_id}")["runs"]) == 2
    epochs = [16 * n for n in range(1, 9)]
    assert _steps(c, trial_id, "training") == epochs  # on from the checkpoint's epoch, each epoch once
    vals = metrics(c, trial_id, "validation")
    assert [m["steps_completed"] for m in vals] == epochs
    assert vals[-1]["metrics"]["accuracy"] > 0.8 and "val_loss" not in vals[-1]["metrics"]
    assert max(ck["steps_completed"] for ck in checkpoints(c, trial_id)) == 128


def test_tf_keras_trial_example_pauses_resumes_from_its_checkpoint_and_completes(keras_cluster):
    c = keras_cluster
    config = (TRIAL / "const.yaml").read_text().replace("batch_sleep: 0.0", "batch_sleep: 0.25").replace(
        "min_checkpoint_period:\n  batches: 32", "min_checkpoint_period:\n  batches: 16")
    exp_id = create(c, config, TRIAL)
    trial_id = first_trial(c, exp_id)
    _pause_after_first_checkpoint(c, exp_id, trial_id, 64)
    _completed(c, exp_id)
    assert len(c.client().get(f"/trials/{trial_id}")["runs"]) == 2
    assert _steps(c, trial_id, "training") == [16, 32, 48, 64]  # every scheduling_unit, each once
    vals = metrics(c, trial_id, "validation")
    assert [m["steps_completed"] for m in vals] == [32, 64]  # min_validation_period; 4 epochs of 16 batches
    assert vals[-1]["metrics"]["val_accuracy"] > 0.75
    assert max(ck["steps_completed"] for ck in checkpoints(c, trial_id)) == 64
    # the det.keras callback's state came back with the checkpoint: its count goes on
    assert any("workload 4 ended at batch 64" in line["log"] for line in logs(c, trial_id))


def test_asha_search_of_the_callback_example_completes(keras_cluster):
    c = keras_cluster
    d = _completed(c, create(c, (CALLBACK / "adaptive_asha.yaml").read_text(), CALLBACK))
    assert len(d["trials"]) == 4
    for trial in d["trials"]:
        assert trial["state"] == "COMPLETED"
        assert metrics(c, trial["id"], "validation")
