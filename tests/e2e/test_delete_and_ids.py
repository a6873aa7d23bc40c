"""`stalwart e delete` on a real cluster (issue 26): a deleted experiment's checkpoints and TensorBoard files leave
storage, except the checkpoint a forked experiment started from, which `e delete` lists with who uses it; once the
fork is deleted too, that one goes; and no id is handed out again, after a master restart either.

The fork starts from the first experiment's trial with Determined's warm start (`e fork --config
searcher.source_trial_id=N`): its trial resumes from that trial's latest checkpoint.
"""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml

from cli_runs import ok
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

FAULTS = pathlib.Path(__file__).resolve().parents[1] / "integration" / "faults"
"""A tiny Core API trial: a step every STEP_SECONDS, a checkpoint every CHECKPOINT_EVERY steps, a ledger line each."""


def _config(tmp_path: pathlib.Path) -> pathlib.Path:
    cfg = {
        "name": "first",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "score", "smaller_is_better": False, "max_length": 6},
        "environment": {"environment_variables": [f"LEDGER={tmp_path / 'ledger'}", "STEP_SECONDS=0.02",
                                                  "CHECKPOINT_EVERY=3"]},
        "max_restarts": 0,
        "checkpoint_storage": {"save_trial_latest": 10},  # keep both checkpoints
    }
    path = tmp_path / "first.yaml"
    path.write_text(yaml.safe_dump(cfg))
    (tmp_path / "context").mkdir()
    (tmp_path / "context" / "train.py").write_text((FAULTS / "train.py").read_text())
    return path


def _ended(env: dict[str, str], exp_id: int) -> dict:
    ok(env, "e", "wait", str(exp_id), "--polling-interval", "0.2")
    described = json.loads(ok(env, "e", "describe", str(exp_id), "--json"))
    assert described["experiment"]["state"] == "COMPLETED", described["experiment"]
    return described


def _ledger_steps(tmp_path: pathlib.Path, trial_id: int) -> list[int]:
    lines = (tmp_path / "ledger").read_text().splitlines()
    return [int(line.split()[2]) for line in lines if line.startswith(f"metric {trial_id} ")]


def test_e_delete_keeps_and_lists_the_checkpoint_a_fork_started_from(tmp_path: pathlib.Path) -> None:
    config = _config(tmp_path)
    with LocalTestCluster(tmp_path / "home") as c:
        env, storage = c.env, tmp_path / "home" / "checkpoints"
        first = json.loads(ok(env, "e", "create", str(config), str(tmp_path / "context"), "--json"))["experiment"]["id"]
        trial = _ended(env, first)["trials"][0]["id"]
        listed = json.loads(ok(env, "e", "list-checkpoints", str(first), "--json"))["checkpoints"]
        older, latest = (ck["uuid"] for ck in sorted(listed, key=lambda ck: ck["steps_completed"]))  # steps 3, 6
        tensorboard = storage / "tensorboard" / "experiment" / str(first)
        assert list((tensorboard / "trial" / str(trial)).glob("events.out.tfevents.*")), "the harness wrote none"

        out = ok(env, "e", "fork", str(first), "--config", f"searcher.source_trial_id={trial}",
                 "--config", "searcher.max_length=9")
        fork = int(out.split("Forked experiment ")[1].split()[0])
        fork_trial = _ended(env, fork)["trials"][0]["id"]
        assert _ledger_steps(tmp_path, fork_trial) == [7, 8, 9]  # it started from the first trial's step 6

        out = ok(env, "e", "delete", str(first), "--yes")
        assert f"Deleted experiment {first}: the files of 1 checkpoint" in out, out
        assert "Kept 1 checkpoint" in out and f"{latest}: trial {fork_trial} of experiment {fork} started from it" \
            in out, out
        assert not (storage / older).exists() and (storage / latest / "state.json").exists()
        assert not tensorboard.exists()

        out = ok(env, "e", "delete", str(fork), "--yes")
        assert "Kept" not in out and not (storage / latest).exists(), out  # nothing uses it any more

        c.kill_master()
        c.start_master()
        again = json.loads(ok(env, "e", "create", str(config), str(tmp_path / "context"), "--json"))["experiment"]
        assert again["id"] > fork, (again["id"], fork)
        assert _ended(env, again["id"])["trials"][0]["id"] > fork_trial
