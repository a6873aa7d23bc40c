"""Acceptance 2, end to end: the seed's seven-step priority-with-preemption scenario on real agents,
scaled from 8 slots to 2 (one agent with 2 slots): "4-slot" jobs take 2 slots, "8-slot" jobs 2 slots
as well (they need the whole cluster), the backfilled "4-slot" job 1 slot."""

from __future__ import annotations

import time

import pytest
import yaml

from integration.helpers import create, digits_config, wait_state
from integration.sched_helpers import GANG, gang_config, job_of, jobs, runs
from stalwart.testing import LocalTestCluster

# About ten trial and job processes start one after another here (each imports torch); on a loaded
# 2-core CI machine with 4 test workers that took more than the suite's default 300 s once.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CONFIG = "resource_manager:\n  scheduler: {type: priority, priority: {preemption: true}}\n"
SLOW = {"hyperparameters__batch_sleep": 0.01}


def _asha(priority: int, trials: int) -> str:
    cfg = yaml.safe_load(digits_config(**SLOW, resources__priority=priority))
    cfg["name"] = "asha"
    cfg["searcher"].update({"name": "random", "max_trials": trials, "max_concurrent_trials": trials})
    return yaml.safe_dump(cfg)


def _command_job(c) -> dict:
    return next(j for j in jobs(c) if j["type"] == "COMMAND")


def test_seed_priority_scenario_end_to_end(tmp_path):
    with LocalTestCluster(tmp_path / "home", master_config=CONFIG, slots=2) as c:
        # 1. priority-2 search, more trials than slots: both slots busy
        asha = create(c, _asha(2, 3))
        c.wait_for(lambda: job_of(c, asha)["slots_allocated"] == 2, what="the search to fill the cluster")
        # 2. priority-1 distributed job (the whole "half" of the cluster): search trials are preempted
        dist = create(c, gang_config("dist", slots=2, sleep=2, priority=1), GANG)
        c.wait_for(lambda: job_of(c, dist)["state"] == "SCHEDULED", what="the distributed job to start")
        assert job_of(c, asha)["slots_allocated"] == 0
        wait_state(c, dist, "COMPLETED")
        # 3. a priority-3 command (not preemptible) waits while the search still wants slots
        # (it runs until step 7 kills it: it may start on a slot the search's last trial leaves free, and a
        # slow machine could otherwise see it end before step 4 looks for it)
        c.client().post("/commands", {"config": {"entrypoint": ["sleep", "900"], "resources": {"priority": 3}}})
        c.wait_for(lambda: job_of(c, asha)["slots_allocated"] == 2, what="the search to take the slots back")
        assert _command_job(c)["state"] == "QUEUED"
        # 4. the search completes: the command runs
        d = wait_state(c, asha, {"COMPLETED", "ERROR"}, timeout=300)
        assert d["experiment"]["state"] == "COMPLETED"
        preempted = [r["exit_reason"] for t in d["trials"] for r in runs(c, t["id"])]
        assert "PREEMPTED" in preempted and all(t["restarts"] == 0 for t in d["trials"])
        c.wait_for(lambda: _command_job(c)["state"] == "SCHEDULED", what="the command to run")
        # 5. a priority-1 job needing the whole cluster cannot start: the command is not preemptible
        big = create(c, gang_config("big", slots=2, sleep=1, priority=1), GANG)
        time.sleep(2)
        assert job_of(c, big)["state"] == "QUEUED"
        # 6. a priority-2 job that fits the idle slot is backfilled
        back = create(c, digits_config(hyperparameters__batch_sleep=0.03, resources__priority=2, name="back"))
        c.wait_for(lambda: job_of(c, back)["state"] == "SCHEDULED_BACKFILLED", what="the backfill")
        assert job_of(c, big)["state"] == "QUEUED"
        # 7. the command is killed: the backfilled job is preempted, the priority-1 job runs, then the
        #    priority-2 job resumes from its checkpoint and completes
        c.cli("cmd", "kill", str(_command_job(c)["entity_id"]), check=True)
        wait_state(c, big, "COMPLETED")
        d = wait_state(c, back, {"COMPLETED", "ERROR"}, timeout=300)
        assert d["experiment"]["state"] == "COMPLETED"
        assert [r["exit_reason"] for r in runs(c, d["trials"][0]["id"])] == ["PREEMPTED", "COMPLETED"]
