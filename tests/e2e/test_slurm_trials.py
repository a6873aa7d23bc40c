"""Trials through Slurm end to end (issue 30, acceptance 2): a real master whose resource manager is this run's
real Slurm (tests/slurm_server.py, a partition of its own per test), with no agent of its own. Each
allocation is a Slurm job whose one-shot agent (`stalwart.agent.slurm_job`) runs the trial.

- the digits example completes as a job seen RUNNING in `squeue`; a pause checkpoints and ends the job, an
  activate submits a new one that resumes from the checkpoint;
- `scontrol requeue` of a running trial's job: the trial resumes from its checkpoint and is not failed;
- a 2-slot distributed trial (gloo DDP, 2 workers on one node) completes as one job;
- so does one of two nodes (`slurm.slots_per_node: 1`), one one-shot agent on each, meeting at its rendezvous."""

from __future__ import annotations

import pytest
import yaml
from slurm_trials import failure_details, our_jobs, running_job, slurm_master

from integration.helpers import (
    DIGITS,
    REPO,
    checkpoints,
    create,
    digits_config,
    experiment,
    first_trial,
    live_run,
    logs,
    wait_state,
)

pytestmark = pytest.mark.integration


OWN_PARTITION = {  # tests/slurm_server.py: one each, so that none waits for another's
    "test_digits_runs_as_a_slurm_job_and_pause_activate_resubmits_and_resumes": "pause",
    "test_a_requeued_job_resumes_its_trial_from_the_checkpoint_and_is_not_a_failure": "requeue",
    "test_a_two_slot_distributed_trial_completes_as_one_slurm_job": "ddp",
    "test_a_two_node_gang_runs_ddp_across_the_jobs_nodes": "ddp2",
}


@pytest.fixture
def c(slurm_cluster, tmp_path, monkeypatch, request):
    with slurm_master(slurm_cluster, tmp_path, monkeypatch, OWN_PARTITION[request.function.__name__]) as cluster:
        yield cluster


def nodes_of(c) -> list[str]:
    return c.slurm.partitions()[c.partition]
DISTRIBUTED = REPO / "examples" / "distributed"


def test_digits_runs_as_a_slurm_job_and_pause_activate_resubmits_and_resumes(c):
    config = digits_config(searcher__max_length={"batches": 60}, min_validation_period={"batches": 20},
                           hyperparameters__batch_sleep=0.1, resources={"resource_pool": c.partition})
    exp_id = create(c, config, DIGITS)
    trial_id = first_trial(c, exp_id)
    first_job = running_job(c)
    assert first_job["user"] == "root" and first_job["nodelist"] in nodes_of(c), first_job
    c.wait_for(lambda: checkpoints(c, trial_id), timeout=120, what="a first checkpoint")
    c.client().experiment_action(exp_id, "pause")
    c.wait_for(lambda: experiment(c, exp_id)["trials"][0]["state"] == "PAUSED" and live_run(c, trial_id) is None,
               timeout=120, what="the trial to stop")
    c.wait_for(lambda: not our_jobs(c), timeout=30, what="the paused trial's Slurm job to end")
    paused_at = max(ck["steps_completed"] for ck in checkpoints(c, trial_id))

    c.client().experiment_action(exp_id, "activate")
    second_job = running_job(c)
    assert second_job["job_id"] != first_job["job_id"]
    described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert described["experiment"]["state"] == "COMPLETED", failure_details(c, trial_id)
    resumed = [line["log"] for line in logs(c, trial_id) if "resumed from checkpoint" in line["log"]]
    assert len(resumed) == 1 and f"steps_completed={paused_at}" in resumed[0], resumed
    assert described["trials"][0]["restarts"] == 0
    c.wait_for(lambda: not our_jobs(c), timeout=30, what="the finished trial's Slurm job to end")


def test_a_requeued_job_resumes_its_trial_from_the_checkpoint_and_is_not_a_failure(c):
    config = digits_config(searcher__max_length={"batches": 60}, min_validation_period={"batches": 20},
                           hyperparameters__batch_sleep=0.1, resources={"resource_pool": c.partition}, max_restarts=0)
    exp_id = create(c, config, DIGITS)
    trial_id = first_trial(c, exp_id)
    job = running_job(c)
    c.wait_for(lambda: checkpoints(c, trial_id), timeout=120, what="a first checkpoint")
    c.slurm.requeue(job["job_id"])
    described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert described["experiment"]["state"] == "COMPLETED", failure_details(c, trial_id)
    assert described["trials"][0]["restarts"] == 0
    text = "\n".join(line["log"] for line in logs(c, trial_id))
    assert "resumed from checkpoint" in text, text[-3000:]
    runs = c.client().get(f"/trials/{trial_id}")["runs"]
    assert len(runs) >= 2 and runs[0]["exit_reason"] in ("AGENT_LOST", "PREEMPTED"), runs


def test_a_two_slot_distributed_trial_completes_as_one_slurm_job(c):
    cfg = yaml.safe_load((DISTRIBUTED / "distributed.yaml").read_text())
    cfg["resources"] = {**cfg.get("resources", {}), "resource_pool": c.partition}
    cfg["searcher"]["max_length"] = {"batches": 20}
    exp_id = create(c, yaml.safe_dump(cfg), DISTRIBUTED)
    trial_id = first_trial(c, exp_id)
    job = running_job(c)
    described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert described["experiment"]["state"] == "COMPLETED", failure_details(c, trial_id)
    ranks = {line.get("rank_id") for line in logs(c, trial_id) if line.get("rank_id") is not None}
    assert ranks >= {0, 1}, ranks
    assert job["nodelist"] in nodes_of(c)


def test_a_two_node_gang_runs_ddp_across_the_jobs_nodes(c):
    """`slurm.slots_per_node: 1`: one job of two nodes (e1 and e2: two slurmd of this host), a one-shot agent on
    each, rank 0 the chief; the two workers meet at the rendezvous the master gave them and train together."""
    cfg = yaml.safe_load((DISTRIBUTED / "distributed.yaml").read_text())
    cfg["resources"] = {**cfg.get("resources", {}), "resource_pool": c.partition}
    cfg["searcher"]["max_length"] = {"batches": 20}
    cfg["slurm"] = {"slots_per_node": 1}
    exp_id = create(c, yaml.safe_dump(cfg), DISTRIBUTED)
    trial_id = first_trial(c, exp_id)
    job = running_job(c)
    assert job["nodelist"] in ("e[1-2]", "e1,e2"), job
    described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert described["experiment"]["state"] == "COMPLETED", failure_details(c, trial_id)
    run = c.client().get(f"/trials/{trial_id}")["runs"][0]
    assert run["agent_id"] == f"slurm-{job['job_id']}-0"  # the chief: the job's first node
    ranks = {line.get("rank_id") for line in logs(c, trial_id) if line.get("rank_id") is not None}
    assert ranks >= {0, 1}, ranks
