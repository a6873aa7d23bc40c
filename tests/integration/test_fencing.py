"""Fencing: a trial never runs twice at once, whatever happens to its agent.

Each test runs the fault-test trial (`faults/train.py`) under a watcher that scans processes every 0.2 s.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys

import pytest
import yaml

from integration.helpers import create, first_trial, live_run, wait_state
from integration.process_watch import DoubleRunWatcher, running, trial_processes
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

FAULTS = pathlib.Path(__file__).with_name("faults")


def fault_config(ledger: pathlib.Path, steps: int = 60, step_seconds: float = 0.1, **extra) -> str:
    cfg = {
        "name": "fencing",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "score", "smaller_is_better": False, "max_length": steps},
        "max_restarts": 5,
        "environment": {"environment_variables": [f"LEDGER={ledger}", f"STEP_SECONDS={step_seconds}"]},
        **extra,
    }
    return yaml.safe_dump(cfg)


def runs(c, trial_id: int) -> list[dict]:
    return c.client().get(f"/trials/{trial_id}")["runs"]


def wait_running_process(c, trial_id: int, marker: str) -> list[int]:
    return c.wait_for(lambda: live_run(c, trial_id) and trial_processes(marker).get(trial_id), timeout=60,
                      what=f"a process of trial {trial_id}")


def test_a_killed_agents_trial_dies_with_it_and_its_restart_takes_over_at_once(tmp_path):
    with LocalTestCluster(tmp_path / "home") as c:
        marker = f"LEDGER={tmp_path / 'ledger'}"
        watcher = DoubleRunWatcher(marker)
        watcher.start()
        exp_id = create(c, fault_config(tmp_path / "ledger"), FAULTS)
        trial_id = first_trial(c, exp_id)
        pids = wait_running_process(c, trial_id, marker)
        c.kill_agent(0)
        # the launcher's watchdog saw the agent's end of its pipe close: the trial is gone, long before the
        # master's agent_timeout (30 s here) could declare the agent lost
        c.wait_for(lambda: not any(running(p) for p in pids), timeout=5,
                   what="the trial to die with its agent")
        c.start_agent(0)
        # the new agent holds the same work directory, so it replaces the dead one at once: the master
        # hears that nothing runs there and re-queues the trial (not counted as a failure)
        c.wait_for(lambda: runs(c, trial_id)[0]["exit_reason"] == "AGENT_LOST", timeout=15,
                   what="the first run to end as AGENT_LOST")
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=120)
        watcher.stop()
        assert d["experiment"]["state"] == "COMPLETED"
        assert d["trials"][0]["restarts"] == 0
        assert watcher.scans > 10 and watcher.doubles == []


def test_a_second_agent_with_a_live_agents_id_is_refused_and_changes_nothing(tmp_path):
    with LocalTestCluster(tmp_path / "home") as c:
        marker = f"LEDGER={tmp_path / 'ledger'}"
        watcher = DoubleRunWatcher(marker)
        watcher.start()
        exp_id = create(c, fault_config(tmp_path / "ledger", steps=80), FAULTS)
        trial_id = first_trial(c, exp_id)
        wait_running_process(c, trial_id, marker)
        # the same id from another work directory (another machine, or a second `up`): refused; it has not the
        # id's own credential (the cluster token only enrolls new ids)
        intruder = c._spawn(["agent", "run", "--master", c.url, "--agent-id", "agent-0", "--work-dir",
                             str(tmp_path / "other"), "--slots", "1"], "intruder.log")
        try:
            c.wait_for(lambda: "agent agent-0 has its own credential" in c.log("intruder.log"), timeout=30,
                       what="the second agent to be refused")
            assert len(runs(c, trial_id)) == 1 and runs(c, trial_id)[0]["state"] == "RUNNING"
        finally:
            intruder.kill()
            intruder.wait()
        # even with the id's credential (its file copied over), refused while the first lives
        shutil.copy(c.home / "agent-0" / "agent-credential.json", tmp_path / "other" / "agent-credential.json")
        intruder = c._spawn(["agent", "run", "--master", c.url, "--agent-id", "agent-0", "--work-dir",
                             str(tmp_path / "other"), "--slots", "1"], "intruder-2.log")
        try:
            c.wait_for(lambda: "held by another running agent" in c.log("intruder-2.log"), timeout=30,
                       what="the second agent to be refused")
            assert len(runs(c, trial_id)) == 1 and runs(c, trial_id)[0]["state"] == "RUNNING"
        finally:
            intruder.kill()
            intruder.wait()
        # a second agent on the same work directory stops at once with a clear error
        res = subprocess.run([sys.executable, "-m", "stalwart.cli.main", "agent", "run", "--master", c.url,
                              "--agent-id", "agent-0", "--work-dir", str(c.home / "agent-0")],
                             env=c.env, capture_output=True, text=True, timeout=60)
        assert res.returncode != 0
        assert "another agent" in res.stderr and "is running with work directory" in res.stderr, res.stderr
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=120)
        watcher.stop()
        assert d["experiment"]["state"] == "COMPLETED"
        assert [r["exit_reason"] for r in runs(c, trial_id)] == ["COMPLETED"]
        assert watcher.doubles == []


def test_an_agent_cut_off_from_its_master_kills_its_trials_before_the_master_declares_it_lost(tmp_path):
    with LocalTestCluster(tmp_path / "home", agent_timeout=6) as c:
        marker = f"LEDGER={tmp_path / 'ledger'}"
        watcher = DoubleRunWatcher(marker)
        watcher.start()
        exp_id = create(c, fault_config(tmp_path / "ledger", steps=150), FAULTS)
        trial_id = first_trial(c, exp_id)
        pids = wait_running_process(c, trial_id, marker)
        os.kill(c.master.pid, signal.SIGSTOP)  # the master hangs: no answer, no heartbeat
        try:
            c.wait_for(lambda: not any(running(p) for p in pids), timeout=15, what="the agent to kill its trial")
        finally:
            os.kill(c.master.pid, signal.SIGCONT)
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=120)
        watcher.stop()
        assert d["experiment"]["state"] == "COMPLETED"
        assert d["trials"][0]["restarts"] == 0  # the agent's own kill is a lost agent's end, not a failure
        assert runs(c, trial_id)[0]["exit_reason"] == "AGENT_LOST"
        assert watcher.doubles == []
        assert "killing 1 allocation(s)" in c.log("agent-0.log")
