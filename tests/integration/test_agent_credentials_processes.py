"""Each agent its own credential, with real processes (LocalTestCluster; issue 25, hole 4; acceptance 3 and 7).

An agent enrolls, keeps its credential (0600) and completes a trial; an agent registered on a database from
before this change (revision 0007) keeps working after the upgrade; a revoked agent is cut off at once, is lost
after agent_timeout, and its trial completes elsewhere without running twice; an enrolled agent needs no cluster
token. The in-process checks of every cluster route are in test_agent_credentials.py.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import yaml
from alembic import command
from alembic.config import Config

from helpers_auth import bearer
from integration.helpers import create, first_trial, live_run, wait_state
from integration.process_watch import DoubleRunWatcher, trial_processes
from stalwart.db.engine import _MIGRATIONS
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

FAULTS = pathlib.Path(__file__).with_name("faults")


def fault_config(ledger: pathlib.Path, steps: int) -> str:
    return yaml.safe_dump({
        "name": "creds", "entrypoint": "python3 train.py", "max_restarts": 5,
        "searcher": {"name": "single", "metric": "score", "smaller_is_better": False, "max_length": steps},
        "environment": {"environment_variables": [f"LEDGER={ledger}", "STEP_SECONDS=0.1"]}})


def _credentials(c: LocalTestCluster) -> dict[str, dict[str, Any]]:
    listed = json.loads(c.cli("agent", "credentials", "--json", check=True).stdout)
    return {row["agent_id"]: row for row in listed["credentials"]}


def _database_of_0007(db_url: str) -> None:
    """A master database as a master before agents' credentials left it, with agent-0 registered."""
    engine = sa.create_engine(db_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0007")
    with engine.begin() as conn:
        assert "agent_credentials" not in sa.inspect(conn).get_table_names()
        conn.execute(sa.text(
            "INSERT INTO agents (id, hostname, resource_pool, slots, slot_type, enabled, connected, registered_at, "
            "last_seen, draining, incarnation) VALUES ('agent-0', 'old-host', 'default', 1, 'cpu', 1, 1, :at, :at, 0, "
            "'an-old-agent-process')"), {"at": time.time() - 600})
    engine.dispose()


def test_an_agent_registered_before_the_upgrade_keeps_working_after_it(tmp_path: pathlib.Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _database_of_0007(f"sqlite:///{home / 'master.db'}")
    with LocalTestCluster(home) as c:
        work = c.home / "agent-0"
        exp_id = create(c, fault_config(tmp_path / "ledger", steps=10), FAULTS)
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=120)
        assert d["experiment"]["state"] == "COMPLETED"
        kept = work / "agent-credential.json"
        assert kept.stat().st_mode & 0o777 == 0o600
        assert json.loads(kept.read_text())["credential"] == c.agent_credential(0)
        row = _credentials(c)["agent-0"]
        assert row["state"] == "active" and row["last_used"], row
        # from now on the cluster token does not register agent-0
        refused = httpx.post(f"{c.url}/api/v1/agents", json={"agent_id": "agent-0", "slots": 1},
                             headers=bearer(c.cluster_token()))
        assert refused.status_code == 403, refused.text
        # restarted, the agent presents its credential and runs again
        c.kill_agent(0)
        c.start_agent(0)
        exp_id = create(c, fault_config(tmp_path / "ledger-2", steps=5), FAULTS)
        assert wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=120)["experiment"]["state"] == "COMPLETED"
        assert "enrolled" not in c.log("agent-0.log").split("registered agent agent-0", 1)[1]


def test_a_revoked_agent_is_cut_off_lost_after_agent_timeout_and_its_trial_runs_once(tmp_path: pathlib.Path) -> None:
    with LocalTestCluster(tmp_path / "home", agent_timeout=6) as c:
        marker = f"LEDGER={tmp_path / 'ledger'}"
        watcher = DoubleRunWatcher(marker)
        watcher.start()
        exp_id = create(c, fault_config(tmp_path / "ledger", steps=150), FAULTS)
        trial_id = first_trial(c, exp_id)
        c.wait_for(lambda: live_run(c, trial_id) and trial_processes(marker).get(trial_id), timeout=60,
                   what="the trial's process")
        said = c.cli("agent", "revoke", "agent-0", check=True).stdout
        assert "Revoked agent agent-0's credential" in said
        # cut off at once: its waiting action poll answers with the refusal, and the agent stops (its trial with it)
        c.wait_for(lambda: c.agents[0].poll() is not None, timeout=20, what="the revoked agent to stop")
        assert "revoked by an admin" in c.log("agent-0.log")
        c.wait_for(lambda: not trial_processes(marker).get(trial_id), timeout=20, what="the trial to stop")
        # lost after agent_timeout, as any silent agent; the trial goes to a new agent and runs once at a time
        c.wait_for(lambda: not live_run(c, trial_id), timeout=30, what="the master to count agent-0 lost")
        assert c.client().get(f"/trials/{trial_id}")["runs"][0]["exit_reason"] == "AGENT_LOST"
        c.start_agent(1)
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=180)
        watcher.stop()
        assert d["experiment"]["state"] == "COMPLETED"
        assert d["trials"][0]["restarts"] == 0
        assert watcher.doubles == []
        states = {k: v["state"] for k, v in _credentials(c).items()}
        assert states == {"agent-0": "revoked", "agent-1": "active"}
        # the id stays cut off: a fresh agent-0 (no credential, the cluster token) is refused and stops
        res = subprocess.run([sys.executable, "-m", "stalwart.cli.main", "agent", "run", "--master", c.url,
                              "--agent-id", "agent-0", "--work-dir", str(tmp_path / "fresh")],
                             env=c.env, capture_output=True, text=True, timeout=60)
        assert res.returncode != 0 and "revoked by an admin" in res.stderr, res.stderr


def test_an_enrolled_agent_needs_no_cluster_token(tmp_path: pathlib.Path) -> None:
    with LocalTestCluster(tmp_path / "home") as c:
        c.agent_credential(0)
        c.kill_agent(0)
        env = {k: v for k, v in c.env.items() if k != "STALWART_CLUSTER_TOKEN"}
        env["STALWART_HOME"] = str(tmp_path / "elsewhere")  # no cluster-token file where the agent looks
        with open(c.home / "agent-0.log", "ab") as log:
            c.agents[0] = subprocess.Popen(
                [sys.executable, "-m", "stalwart.cli.main", "agent", "run", "--master", c.url, "--agent-id",
                 "agent-0", "--slots", "1", "--work-dir", str(c.home / "agent-0")],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        exp_id = create(c, fault_config(tmp_path / "ledger", steps=5), FAULTS)
        assert wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=120)["experiment"]["state"] == "COMPLETED"
        os.makedirs(tmp_path / "new-work")
        res = subprocess.run([sys.executable, "-m", "stalwart.cli.main", "agent", "run", "--master", c.url,
                              "--agent-id", "agent-9", "--work-dir", str(tmp_path / "new-work")],
                             env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode != 0 and re.search(r"no credential in .* and no cluster token", res.stderr), res.stderr
