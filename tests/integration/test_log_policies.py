"""Log policies that act and log retention (Determined 0.38.1, docs/logs.md), on a real master with real trial
processes: a `cancel_retries` match ends a failing trial at once whatever max_restarts says; an `exclude_node`
match (0.37's `{type: ...}` form) keeps the trial's next run off that agent; the master's default policies apply to
an experiment that names none; trial logs past their retention are deleted on the master's schedule, and only
those; `e set log-retention` overrides the master's, and is refused to a user who may not edit the experiment."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest
import sqlalchemy as sa

from helpers_auth import log_in
from integration.helpers import create, logs, wait_state
from stalwart.client.auth_file import AuthFile
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

FAILING = "import sys\nprint({line!r}, flush=True)\nsys.exit(1)\n"

CANCEL = """
name: cancel-retries
entrypoint: python3 fail.py
max_restarts: 3
searcher: {name: single, metric: loss, max_length: {batches: 1}}
log_policies:
  - name: Corrupt data
    pattern: "DATA CORRUPT in shard \\\\d+"
    action: cancel_retries
"""

EXCLUDE_037 = """
name: exclude-node
entrypoint: python3 fail.py
max_restarts: 2
searcher: {name: single, metric: loss, max_length: {batches: 1}}
log_policies:
  - pattern: "GPU fell off the bus"
    action: {type: exclude_node}
"""

MASTER = """
task_container_defaults:
  log_policies:
    - name: Known fatal
      pattern: KNOWN FATAL
      action: cancel_retries
retention_policy:
  log_retention_days: 1
  schedule: 1s
"""

PLAIN = """
name: master-defaults-{n}
entrypoint: python3 fail.py
max_restarts: 2
searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
"""


def _context(tmp_path, line: str):
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "fail.py").write_text(FAILING.format(line=line))
    return ctx


def _only_trial(c, exp_id: int) -> dict:
    [trial] = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=90)["trials"]
    return dict(c.client().get(f"/trials/{trial['id']}"))


def test_cancel_retries_ends_the_trial_after_one_run_and_shows_the_policy(cluster, tmp_path):
    c = cluster
    exp_id = create(c, CANCEL, _context(tmp_path, "DATA CORRUPT in shard 7"))
    detail = _only_trial(c, exp_id)
    trial = detail["trial"]
    assert (trial["state"], trial["restarts"], len(detail["runs"])) == ("ERROR", 0, 1)
    assert trial["log_policy_matched"] == "Corrupt data"
    assert "log policy 'Corrupt data'" in trial["error_message"] and "not restarted" in trial["error_message"]
    [match] = detail["log_policy_matches"]
    assert (match["action"], match["agent_id"], match["log"].strip()) == (
        "cancel_retries", detail["runs"][0]["agent_id"], "DATA CORRUPT in shard 7")
    described = c.cli("t", "describe", str(trial["id"]), check=True).stdout
    assert "Log policy matched" in described and "Corrupt data" in described
    listed = json.loads(c.cli("e", "describe", str(exp_id), "--json", check=True).stdout)
    assert listed["trials"][0]["log_policy_matched"] == "Corrupt data"
    assert c.client().get(f"/ui/trials/{trial['id']}")["trial"]["log_policy_matched"] == "Corrupt data"


def test_exclude_node_in_the_037_form_keeps_the_restart_off_the_first_agent(tmp_path):
    with LocalTestCluster(tmp_path / "home", agents=2) as c:
        c.wait_for(lambda: len(c.client().get("/agents")["agents"]) == 2, what="two agents")
        exp_id = create(c, EXCLUDE_037, _context(tmp_path, "nvml: GPU fell off the bus"))
        trial_id = c.wait_for(lambda: c.client().get(f"/experiments/{exp_id}")["trials"], what="the trial")[0]["id"]

        def third_run_waiting() -> dict | None:
            d = dict(c.client().get(f"/trials/{trial_id}"))
            return d if len(d["runs"]) == 3 and d["runs"][2]["pending_reason"] else None

        detail = c.wait_for(third_run_waiting, timeout=90, what="the third run to wait with both agents excluded")
        shown_logs = logs(c, trial_id)
        c.cli("e", "kill", str(exp_id), check=True)
        wait_state(c, exp_id, {"CANCELED"}, timeout=60)
    first, second, third = detail["runs"]
    assert first["agent_id"] != second["agent_id"] and {first["agent_id"], second["agent_id"]} == {"agent-0", "agent-1"}
    assert [(m["agent_id"], m["action"], m["policy_name"]) for m in detail["log_policy_matches"]] == [
        (first["agent_id"], "exclude_node", None), (second["agent_id"], "exclude_node", None)]
    assert third["state"] == "PENDING" and "kept off agent(s) agent-0, agent-1" in third["pending_reason"]
    assert detail["trial"]["restarts"] == 2 and "log_policy_matched" not in detail["trial"]  # a 0.37 policy: no name
    assert sum("the trial's later runs are not placed on agent" in e["log"] for e in shown_logs) == 2


def _cli_as(c, tmp_path, user: str, *args: str):
    c.client().post("/users", {"username": user, "password": f"{user}-pw-1"})
    with httpx.Client(base_url=c.url) as plain:
        token = log_in(plain, user, f"{user}-pw-1")
    home = tmp_path / f"cli-{user}"
    home.mkdir()
    AuthFile(home / "auth.json").store(c.url, user, token)
    env = {**c.env, "STALWART_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=60)


def test_master_default_policies_apply_and_retention_deletes_only_expired_logs(tmp_path):
    with LocalTestCluster(tmp_path / "home", master_config=MASTER) as c:
        ctx = _context(tmp_path, "KNOWN FATAL: cannot recover")
        exps = [create(c, PLAIN.format(n=n), ctx) for n in range(3)]
        trials = [_only_trial(c, e)["trial"] for e in exps]
        assert [(t["state"], t["restarts"], t["log_policy_matched"]) for t in trials] == [
            ("ERROR", 0, "Known fatal")] * 3
        aged, fresh, forever = exps
        refused = _cli_as(c, tmp_path, "bob", "e", "set", "log-retention", str(forever), "--forever")
        assert refused.returncode != 0 and "lacks edit_experiments" in refused.stderr + refused.stdout
        c.cli("e", "set", "log-retention", str(forever), "--forever", check=True)
        assert c.client().get(f"/experiments/{forever}")["config"]["retention_policy"] == {
            "log_retention_days": -1}
        engine = sa.create_engine(c.db_url)
        with engine.begin() as conn:  # they ended two days ago (the master's retention: one day)
            conn.execute(sa.text("UPDATE trials SET ended_at = ended_at - 2 * 86400 WHERE experiment_id IN (:a, :b)"),
                         {"a": aged, "b": forever})
        engine.dispose()
        c.wait_for(lambda: logs(c, trials[0]["id"]) == [], timeout=30, what="the expired trial's logs to go")
        time.sleep(1.5)  # another cleanup or two: what is kept stays
        for kept in trials[1:]:
            assert any("KNOWN FATAL" in e["log"] for e in logs(c, kept["id"]))
