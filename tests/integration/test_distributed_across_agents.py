"""A 2-slot trial across two 1-slot agents on loopback: gloo DDP over the master's gang placement.

Issue 5, acceptance 3: the digits PyTorchTrial of examples/distributed/ spans both agents (one
container each, ranks and rendezvous from the master), trains exactly like one process with the
whole global batch, and when one agent dies mid-run the gang is re-queued without counting a
restart and resumes from its latest checkpoint once the agent is back.
"""

from __future__ import annotations

import pytest
import yaml

from integration.helpers import REPO, checkpoints, create, first_trial, logs, metrics, wait_state
from integration.sched_helpers import runs
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

EXAMPLE = REPO / "examples" / "distributed"


@pytest.fixture
def two_agents(tmp_path):
    with LocalTestCluster(tmp_path / "home", agents=2, slots=1, agent_timeout=4) as c:
        yield c


def _config(slots: int, **changes) -> str:
    cfg = yaml.safe_load((EXAMPLE / "distributed.yaml").read_text())
    cfg["resources"]["slots_per_trial"] = slots
    for key, value in changes.items():
        if key in ("batch_sleep",):
            cfg["hyperparameters"][key] = value
        else:
            cfg[key] = value
    return yaml.safe_dump(cfg)


def _loss(c, trial_id: int) -> list[tuple[int, float]]:
    return [(m["steps_completed"], m["metrics"]["loss"]) for m in metrics(c, trial_id, "training")]


def _finish(c, exp_id: int, timeout: float = 300) -> dict:
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=timeout)
    assert d["experiment"]["state"] == "COMPLETED", (d["experiment"]["error_message"], c.log("master.log")[-3000:])
    return d


def test_two_slot_trial_spans_two_agents_and_trains_like_one_process(two_agents):
    c = two_agents
    two = _finish(c, create(c, _config(2), EXAMPLE))["trials"][0]
    one = _finish(c, create(c, _config(1), EXAMPLE))["trials"][0]
    lines = logs(c, two["id"])
    assert {line["agent_id"] for line in lines if line.get("agent_id")} == {"agent-0", "agent-1"}
    assert {line["rank_id"] for line in lines} >= {0, 1}
    got, want = _loss(c, two["id"]), _loss(c, one["id"])
    assert [s for s, _ in got] == [s for s, _ in want] == [10, 20, 30, 40]
    for (step, a), (_, b) in zip(got, want, strict=True):
        assert a == pytest.approx(b, rel=1e-5), f"steps_completed={step}: 2 agents {a} vs 1 process {b}"


def test_losing_an_agent_restarts_the_gang_from_its_checkpoint_once_it_is_back(two_agents):
    c = two_agents
    exp_id = create(c, _config(2, batch_sleep=0.1,
                               searcher={"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                                         "max_length": {"batches": 100}}), EXAMPLE)
    trial_id = first_trial(c, exp_id)
    c.wait_for(lambda: checkpoints(c, trial_id), timeout=180, what="a first checkpoint")
    c.kill_agent(1)
    c.wait_for(lambda: runs(c, trial_id)[0]["exit_reason"] == "AGENT_LOST", timeout=60, what="the agent to be lost")
    c.start_agent(1)
    d = _finish(c, exp_id)
    trial = d["trials"][0]
    assert trial["restarts"] == 0  # a lost agent is not the trial's failure
    assert [r["exit_reason"] for r in runs(c, trial_id)] == ["AGENT_LOST", "COMPLETED"]
    second = [m["steps_completed"] for m in metrics(c, trial_id, "training") if m["trial_run_id"] == 2]
    saved = {ck["steps_completed"] for ck in checkpoints(c, trial_id)}
    assert second and min(second) > 10 and min(second) - 10 in saved  # resumed from a checkpoint, not from 0
    steps = [m["steps_completed"] for m in metrics(c, trial_id, "training")]
    assert steps == sorted(set(steps)) and steps[-1] == 100
