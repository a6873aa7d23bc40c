"""Warm starts on a real cluster (issue 29, acceptance 5): an experiment whose `searcher.source_trial_id` or
`searcher.source_checkpoint_uuid` names a checkpoint of Determined's legacy PyTorchTrial example starts every trial
from it, as Determined 0.38.1 does: the model, optimizer, LR-scheduler and RNG states are loaded, and the trial's
batch count restarts at 0. With `perform_initial_validation: true` the validation at batch 0 is the source
checkpoint's own validation (within 1e-6); the trial's metrics and checkpoints are numbered from batch 0.
The refusals (403 without view on the source, 400 naming the key) are tests/integration/test_warm_start_authz.py.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from integration.helpers import REPO, checkpoints, create, metrics, wait_state
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

LEGACY = REPO / "examples" / "determined" / "legacy_trial"
COMPARED = ("validation_loss", "accuracy")


def _config(name: str, batches: int, validate_every: int, **changes: Any) -> str:
    cfg = yaml.safe_load((LEGACY / "const.yaml").read_text())
    searcher = {**cfg["searcher"], "max_length": {"batches": batches}, **changes.pop("searcher", {})}
    cfg.update(name=name, min_validation_period={"batches": validate_every}, scheduling_unit=5, searcher=searcher,
               **changes)
    return yaml.safe_dump(cfg)


def _completed(c: LocalTestCluster, exp_id: int) -> list[dict[str, Any]]:
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"})
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]
    return list(d["trials"])


def _validations(c: LocalTestCluster, trial_id: int) -> dict[int, dict[str, Any]]:
    return {m["steps_completed"]: m["metrics"] for m in metrics(c, trial_id, "validation")}


def _assert_warm_started(c: LocalTestCluster, trial_id: int, source: dict[str, Any], batches: int) -> None:
    """The trial validated the source's weights at batch 0, then trained `batches` batches of its own."""
    vals = _validations(c, trial_id)
    assert min(vals) == 0, sorted(vals)
    for key in COMPARED:
        assert vals[0][key] == pytest.approx(source[key], abs=1e-6, rel=0), (key, vals[0], source)
    steps = sorted(m["steps_completed"] for m in metrics(c, trial_id, "training"))
    assert steps and steps[0] <= 5 and steps[-1] == batches, steps  # restarted at 0, not at the source's 40
    assert max(vals) == batches
    assert [ck["steps_completed"] for ck in checkpoints(c, trial_id)][-1:] == [batches]


def test_a_warm_started_experiment_validates_the_source_checkpoint_at_batch_0(tmp_path) -> None:
    with LocalTestCluster(tmp_path / "home", slots=2) as c:
        first = create(c, _config("source", 40, 20), LEGACY)
        (source_trial,) = _completed(c, first)
        ckpt = max(checkpoints(c, source_trial["id"]), key=lambda ck: ck["steps_completed"])
        assert ckpt["steps_completed"] == 40
        source = _validations(c, source_trial["id"])[40]

        by_trial = create(c, _config("from-trial", 20, 10, perform_initial_validation=True,
                                     searcher={"source_trial_id": source_trial["id"]}), LEGACY)
        grid = _config("from-uuid", 10, 10, perform_initial_validation=True,
                       searcher={"name": "grid", "source_checkpoint_uuid": ckpt["uuid"]})
        assert "  learning_rate: 0.05\n" in grid
        grid = grid.replace("learning_rate: 0.05", "learning_rate: {type: categorical, vals: [0.05, 0.02]}")
        by_uuid = create(c, grid, LEGACY)

        (trial,) = _completed(c, by_trial)
        _assert_warm_started(c, trial["id"], source, 20)
        grid_trials = _completed(c, by_uuid)
        assert len(grid_trials) == 2  # every trial of the search starts from the checkpoint
        for t in grid_trials:
            _assert_warm_started(c, t["id"], source, 10)
