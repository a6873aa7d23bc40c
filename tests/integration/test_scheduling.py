"""Scheduling end to end on real processes: the job queue, priorities and preemption with resume,
pools from a master config, commands, agents disabled or lost, and gangs spanning two agents."""

from __future__ import annotations

import pytest

from integration.helpers import checkpoints, create, digits_config, first_trial, logs, metrics, wait_state
from integration.sched_helpers import GANG, gang_config, job_of, jobs, runs
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

PREEMPTIVE = """
resource_manager:
  default_aux_resource_pool: aux
  scheduler: {type: priority, priority: {preemption: true}}
resource_pools:
  - pool_name: default
  - pool_name: aux
    description: CPU-only tasks
"""


@pytest.fixture
def preemptive(tmp_path):
    with LocalTestCluster(tmp_path / "home", master_config=PREEMPTIVE, agents=2, agent_pools=["default", "aux"],
                          agent_timeout=4) as c:
        yield c


def test_job_queue_order_priority_moves_and_bad_priority(any_db_cluster):
    c = any_db_cluster
    first = create(c, gang_config("first", sleep=60), GANG)
    c.wait_for(lambda: (j := job_of(c, first)) and j["state"] == "SCHEDULED", what="the first job to run")
    second = create(c, gang_config("second", sleep=0), GANG)
    third = create(c, gang_config("third", sleep=0), GANG)
    queue = jobs(c)
    assert [(j["entity_id"], j["queue_position"], j["state"]) for j in queue] == [
        (first, 1, "SCHEDULED"), (second, 2, "QUEUED"), (third, 3, "QUEUED")]
    j = queue[0]
    assert set(j) >= {"job_id", "type", "entity_id", "name", "owner", "state", "priority", "weight", "queue_position",
                      "resource_pool", "slots_requested", "slots_allocated", "submitted_at"}
    assert (j["type"], j["name"], j["priority"], j["weight"], j["resource_pool"]) == ("EXPERIMENT", "first", 42, 1.0,
                                                                                       "default")
    assert (j["slots_requested"], j["slots_allocated"]) == (1, 1)

    res = c.cli("e", "set", "priority", str(third), "10", check=True)
    assert "priority is now 10" in res.stdout
    assert [j["entity_id"] for j in jobs(c)] == [third, first, second]
    moved = c.client().post(f"/jobs/{job_of(c, second)['job_id']}/move", {"ahead_of": job_of(c, first)["job_id"]})
    assert [j["entity_id"] for j in moved["jobs"]] == [third, second, first]
    reply = c.client().post(f"/jobs/{job_of(c, first)['job_id']}/priority", {"priority": 40})
    assert reply["job"]["priority"] == 40 and [j["entity_id"] for j in jobs(c)] == [third, first, second]

    bad = c.cli("job", "update", job_of(c, first)["job_id"], "--priority", "100")
    assert bad.returncode == 2 and "priority: expected an integer from 1 (most urgent) to 99, got 100" in bad.stderr
    assert "Traceback" not in bad.stderr
    listing = c.cli("job", "list", check=True).stdout
    assert "first" in listing and "SCHEDULED" in listing and "QUEUED" in listing
    c.cli("e", "kill", str(first), check=True)
    wait_state(c, third, "COMPLETED")  # the higher priority runs next, although submitted last
    wait_state(c, second, "COMPLETED")


def test_unknown_pool_is_refused_and_an_impossible_request_is_reported(cluster):
    c = cluster
    with pytest.raises(Exception) as err:
        create(c, gang_config("nopool", resource_pool="gpu"), GANG)
    assert "resources.resource_pool: unknown resource pool 'gpu'; this cluster's pools are: default" in str(err.value)
    big = create(c, gang_config("big", slots=4), GANG)
    job = c.wait_for(lambda: (j := job_of(c, big)) and "needs" in (j.get("reason") or "") and j,
                     what="a reason on the job")
    assert job["state"] == "QUEUED" and "needs 4 slots" in job["reason"] and "1 slot(s) on 1 agent(s)" in job["reason"]
    assert "needs 4 slots" in c.cli("job", "list", "--json", check=True).stdout


def test_preempted_trial_checkpoints_and_resumes_with_steps_continuing(preemptive):
    """Acceptance 4 in small: a low-priority digits trial is preempted by an urgent job, checkpoints,
    waits in the queue, and resumes from that checkpoint; no step is lost or reported twice."""
    c = preemptive
    low = create(c, digits_config(**{"hyperparameters__batch_sleep": 0.02, "resources__priority": 50}))
    trial = first_trial(c, low)
    c.wait_for(lambda: checkpoints(c, trial), what="a first checkpoint")
    urgent = create(c, gang_config("urgent", sleep=2, priority=10), GANG)
    c.wait_for(lambda: job_of(c, low)["state"] == "QUEUED" and job_of(c, urgent)["state"] == "SCHEDULED",
               what="the urgent job to take the slot")
    wait_state(c, urgent, "COMPLETED")
    d = wait_state(c, low, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED", c.log("master.log")[-2000:]
    assert d["trials"][0]["restarts"] == 0
    [first_run, second_run] = runs(c, trial)
    assert first_run["exit_reason"] == "PREEMPTED" and second_run["exit_reason"] == "COMPLETED"
    steps = [m["steps_completed"] for m in metrics(c, trial, "training")]
    assert steps == sorted(set(steps)) and steps[-1] == 400
    assert [m["steps_completed"] for m in metrics(c, trial, "validation")] == [100, 200, 300, 400]
    assert any("exited after preemption" in line["log"] for line in logs(c, trial))


def test_commands_run_log_and_die_and_zero_slot_ones_use_the_aux_pool(preemptive):
    c = preemptive
    res = c.cli("cmd", "run", "--config", "resources.slots=0", "sh", "-c", "echo hello from $DET_TASK_ID", check=True)
    assert "hello from command-1" in res.stdout and "COMPLETED" in res.stdout
    task = c.client().get("/tasks", all="true")["tasks"][0]
    assert {k: task[k] for k in ("id", "type", "state", "resource_pool")} == {
        "id": 1, "type": "COMMAND", "state": "TERMINATED", "resource_pool": "aux"}
    assert set(task) >= {"id", "type", "description", "state", "owner", "resource_pool", "created_at"}
    lines = list(c.client().stream_lines("/tasks/1/logs", follow="false"))
    assert any(e["log"] == "hello from command-1" for e in lines)
    assert {"id", "timestamp", "level", "log"} <= set(lines[0])

    sleeper = c.cli("cmd", "run", "-d", "sleep", "60", check=True)
    assert "Launched command 2" in sleeper.stdout and "pool default" in sleeper.stdout
    c.wait_for(lambda: c.client().get("/commands/2")["command"]["state"] == "RUNNING", what="the command to run")
    assert [j["type"] for j in jobs(c)] == ["COMMAND"]
    c.cli("cmd", "set", "priority", "2", "7", check=True)
    assert jobs(c)[0]["priority"] == 7
    # not preemptible: an urgent experiment waits instead of preempting it
    urgent = create(c, gang_config("urgent", priority=1), GANG)
    c.wait_for(lambda: job_of(c, urgent) and job_of(c, urgent)["state"] == "QUEUED", what="the urgent job to queue")
    assert "sleep 60" in c.cli("cmd", "list", check=True).stdout
    c.cli("cmd", "kill", "2", check=True)
    c.wait_for(lambda: c.client().get("/commands/2")["command"]["result"] == "CANCELED", what="the kill")
    wait_state(c, urgent, "COMPLETED")


def test_disable_preempts_drain_waits_and_slot_list(preemptive):
    c = preemptive
    exp = create(c, gang_config("long", sleep=60, preemption_timeout=1), GANG)
    trial = first_trial(c, exp)
    c.wait_for(lambda: job_of(c, exp)["state"] == "SCHEDULED", what="the trial to run")
    slots = c.client().get("/slots")["slots"]
    assert [(s["agent_id"], s["slot_id"], s["task_id"]) for s in slots] == [
        ("agent-0", 0, f"trial-{trial}"), ("agent-1", 0, None)]
    c.cli("agent", "disable", "--drain", "agent-0", check=True)
    assert job_of(c, exp)["state"] == "SCHEDULED"  # draining: it keeps running
    c.cli("agent", "disable", "agent-0", check=True)  # not draining: its trial is preempted
    # the script ignores the signal: killed after preemption_timeout (1 s), re-queued, not counted
    c.wait_for(lambda: runs(c, trial)[0]["state"] == "TERMINATED", timeout=30, what="the preempted trial to stop")
    assert job_of(c, exp)["state"] == "QUEUED"
    listing = c.cli("agent", "list", check=True).stdout
    assert "agent-0" in listing
    assert c.cli("agent", "enable").returncode == 2  # an id or --all
    c.cli("agent", "enable", "--all", check=True)
    c.wait_for(lambda: job_of(c, exp)["state"] == "SCHEDULED", what="the trial to run again")
    assert runs(c, trial)[0]["exit_reason"] == "PREEMPTED"
    assert experiment_trial(c, exp)["restarts"] == 0
    c.cli("e", "kill", str(exp), check=True)
    assert "agent-1" in c.cli("slot", "list", check=True).stdout


@pytest.fixture
def two_agents(tmp_path):
    with LocalTestCluster(tmp_path / "home", agents=2, agent_timeout=4) as c:
        yield c


def experiment_trial(c, exp_id: int) -> dict:
    return c.client().get(f"/experiments/{exp_id}")["trials"][0]


def _gang_lines(c, trial_id: int) -> list[str]:
    return sorted(line["log"] for line in logs(c, trial_id) if line["log"].startswith("GANG "))


def test_a_two_slot_trial_spans_two_one_slot_agents_with_ranks_and_addresses(two_agents):
    c = two_agents
    exp = create(c, gang_config("gang2", slots=2, sleep=1), GANG)
    d = wait_state(c, exp, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED", c.log("master.log")[-2000:]
    trial = d["trials"][0]["id"]
    [run] = runs(c, trial)
    lines = _gang_lines(c, trial)
    port = lines[0].split("port=")[1].split()[0]
    assert 29500 <= int(port) < 30500
    assert lines == [
        f'GANG rank=0 n=2 det_rank=0 addrs=["127.0.0.1", "127.0.0.1"] port={port} slots=[0] info_rank=0 agent=agent-0',
        f'GANG rank=1 n=2 det_rank=1 addrs=["127.0.0.1", "127.0.0.1"] port={port} slots=[0] info_rank=1 agent=agent-1',
    ]
    assert run["exit_code"] == 0 and run["agent_id"] == "agent-0"


def test_one_failed_container_tears_the_gang_down_as_one_failure(two_agents):
    c = two_agents
    exp = create(c, gang_config("gangfail", slots=2, sleep=30, fail_rank=1, max_restarts=1), GANG)
    d = wait_state(c, exp, {"COMPLETED", "ERROR"}, timeout=120)
    assert d["experiment"]["state"] == "ERROR"
    trial = d["trials"][0]
    assert trial["restarts"] == 1  # two gang failures, each one failure: the first restarted, the second ends it
    assert [r["exit_code"] for r in runs(c, trial["id"])] == [1, 1]
    # the chief slept 30 s: it was killed with its gang, not waited for
    assert all(r["ended_at"] - r["started_at"] < 20 for r in runs(c, trial["id"]))


def test_losing_an_agent_requeues_the_whole_gang_without_counting_a_restart(two_agents):
    c = two_agents
    exp = create(c, gang_config("ganglost", slots=2, sleep=8), GANG)
    trial = first_trial(c, exp)
    c.wait_for(lambda: runs(c, trial) and runs(c, trial)[0]["state"] == "RUNNING", what="the gang to run")
    c.kill_agent(1)
    c.wait_for(lambda: runs(c, trial)[0]["exit_reason"] == "AGENT_LOST", timeout=30, what="the agent to be lost")
    assert job_of(c, exp)["state"] == "QUEUED"  # one slot left: the 2-slot gang waits, holding nothing
    c.start_agent(1)
    d = wait_state(c, exp, {"COMPLETED", "ERROR"}, timeout=120)
    assert d["experiment"]["state"] == "COMPLETED" and d["trials"][0]["restarts"] == 0
    assert [r["exit_reason"] for r in runs(c, trial)] == ["AGENT_LOST", "COMPLETED"]
