"""Distributed trials end to end: one real agent with 2 CPU slots, `slots_per_trial: 2`, gloo DDP.

The examples in examples/distributed/ (a PyTorchTrial through Determined's launcher and a Core API
script) must complete with only the chief reporting, train exactly as one process with the whole
global batch does (same losses within float tolerance), resume after a pause with both workers,
and restart from the latest checkpoint when one worker dies (the whole gang goes down with it).
"""

from __future__ import annotations

import os
import pathlib
import signal

import pytest
import yaml

from integration.helpers import REPO, checkpoints, create, experiment, first_trial, live_run, logs, metrics, wait_state
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

EXAMPLE = REPO / "examples" / "distributed"


@pytest.fixture
def two_slot_cluster(tmp_path):
    with LocalTestCluster(tmp_path / "home", slots=2) as c:
        yield c


def config(name: str, *, slots: int, **hparams) -> str:
    cfg = yaml.safe_load((EXAMPLE / name).read_text())
    cfg["resources"]["slots_per_trial"] = slots
    cfg["hyperparameters"].update(hparams)
    return yaml.safe_dump(cfg)


def curve(c, trial_id: int, group: str, key: str) -> list[tuple[int, float]]:
    return [(m["steps_completed"], m["metrics"][key]) for m in metrics(c, trial_id, group)]


def run_to_end(c, text: str) -> dict:
    exp_id = create(c, text, EXAMPLE)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert d["experiment"]["state"] == "COMPLETED", c.log("agent-0.log")[-4000:]
    return d["trials"][0]


def assert_same_curve(got: list, want: list, rel: float) -> None:
    assert [s for s, _ in got] == [s for s, _ in want]
    for (step, a), (_, b) in zip(got, want, strict=True):
        assert a == pytest.approx(b, rel=rel), f"at steps_completed={step}: {a} vs {b}"


@pytest.mark.parametrize("name", ["distributed.yaml", "core_api.yaml"])
def test_two_workers_train_like_one_process_with_the_whole_batch(two_slot_cluster, name):
    c = two_slot_cluster
    two = run_to_end(c, config(name, slots=2))
    one = run_to_end(c, config(name, slots=1))
    runs = c.client().get(f"/trials/{two['id']}")["runs"]
    assert len(runs) == 1 and runs[0]["slots"] == 2 and len(runs[0]["slot_ids"]) == 2
    # Only the chief reports: one point per step, exactly the single process's steps.
    training = curve(c, two["id"], "training", "loss")
    assert [s for s, _ in training] == [10, 20, 30, 40]
    assert_same_curve(training, curve(c, one["id"], "training", "loss"), rel=1e-5)
    assert [s for s, _ in curve(c, two["id"], "validation", "validation_loss")] == [20, 40]
    assert sorted(ck["steps_completed"] for ck in checkpoints(c, two["id"])) == \
        sorted(ck["steps_completed"] for ck in checkpoints(c, one["id"]))
    lines = logs(c, two["id"])
    assert {line["rank_id"] for line in lines} >= {0, 1}  # both workers ran, their output filed by rank
    assert not any("[rank=" in line["log"] for line in lines)


def test_two_workers_resume_after_pause_where_they_stopped(two_slot_cluster):
    c = two_slot_cluster
    reference = run_to_end(c, config("distributed.yaml", slots=1))
    # 0.5 s a batch: ~15 s between the first report (step 10) and the end (40), room for a loaded machine's pause
    exp_id = create(c, config("distributed.yaml", slots=2, batch_sleep=0.5), EXAMPLE)
    trial_id = first_trial(c, exp_id)
    c.wait_for(lambda: metrics(c, trial_id, "training"), timeout=120, what="a first training report")
    c.cli("e", "pause", str(exp_id), check=True)
    c.wait_for(lambda: experiment(c, exp_id)["trials"][0]["state"] == "PAUSED" and live_run(c, trial_id) is None,
               timeout=120, what="both workers to stop")
    paused_at = max(ck["steps_completed"] for ck in checkpoints(c, trial_id))
    assert 0 < paused_at < 40
    c.cli("e", "activate", str(exp_id), check=True)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=240)
    assert d["experiment"]["state"] == "COMPLETED", c.log("agent-0.log")[-4000:]
    runs = c.client().get(f"/trials/{trial_id}")["runs"]
    assert [r["exit_reason"] for r in runs] == ["PREEMPTED", "COMPLETED"]
    second = [m["steps_completed"] for m in metrics(c, trial_id, "training") if m["trial_run_id"] == 2]
    assert second and min(second) == paused_at + 10
    assert_same_curve(curve(c, trial_id, "training", "loss"), curve(c, reference["id"], "training", "loss"),
                      rel=1e-5)


def worker_pids(allocation_id: str) -> dict[int, int]:
    """{rank: pid} of the training processes (not their wrap_rank parents) of an allocation."""
    found = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = pathlib.Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            cmd = pathlib.Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        rank = [int(v.split(b"=", 1)[1]) for v in env if v.startswith(b"RANK=")]
        if f"STALWART_ALLOCATION_ID={allocation_id}".encode() in env and rank and \
                cmd.split(b"\0")[1:3] == [b"-m", b"stalwart.harness.pytorch.legacy"]:
            found[rank[0]] = int(entry)
    return found


def test_a_dead_worker_takes_the_gang_down_and_the_trial_restarts_from_its_checkpoint(two_slot_cluster):
    c = two_slot_cluster
    cfg = yaml.safe_load(config("distributed.yaml", slots=2, batch_sleep=0.1))
    cfg.update(max_restarts=1, searcher={**cfg["searcher"], "max_length": {"batches": 100}})
    text = yaml.safe_dump(cfg)
    exp_id = create(c, text, EXAMPLE)
    trial_id = first_trial(c, exp_id)
    c.wait_for(lambda: checkpoints(c, trial_id), timeout=120, what="a first checkpoint")
    run = live_run(c, trial_id)
    pids = c.wait_for(lambda: len(p := worker_pids(run["id"])) == 2 and p, what="both workers")
    os.kill(pids[1], signal.SIGKILL)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=240)
    assert d["experiment"]["state"] == "COMPLETED", c.log("agent-0.log")[-4000:]
    runs = c.client().get(f"/trials/{trial_id}")["runs"]
    assert len(runs) == 2 and runs[0]["exit_code"] not in (0, None)  # the gang failed as one, restarted once
    assert all(not _alive(pid) for pid in pids.values())
    restarted = [m["steps_completed"] for m in metrics(c, trial_id, "training") if m["trial_run_id"] == 2]
    saved = {ck["steps_completed"] for ck in checkpoints(c, trial_id)}
    assert restarted and min(restarted) > 10 and min(restarted) - 10 in saved  # resumed from a checkpoint


def _alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in pathlib.Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
