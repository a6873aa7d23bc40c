"""Smaller things of issue 26 on a real cluster, through the `stalwart` program: `cmd list` names each command's
workspace and project; `trial logs --follow --tail 2` prints the last 2 lines, then the new ones; a trial's last run
is labelled COMPLETED."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import threading

import pytest
import yaml

from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

TALKS_THEN_WAITS = """
import os, pathlib, time

for i in range(1, 6):
    print(f"line {i}", flush=True)
flag = pathlib.Path(os.environ["FLAG"])
for _ in range(600):
    if flag.exists():
        break
    time.sleep(0.1)
print("line 6", flush=True)
print("line 7", flush=True)
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    with LocalTestCluster(tmp_path_factory.mktemp("small") / "home") as c:
        yield c


def _ended(c: LocalTestCluster, cmd_id: int) -> bool:
    return c.client().get(f"/commands/{cmd_id}")["command"]["result"] != "ACTIVE"


def test_cmd_list_names_each_commands_workspace_and_project(small):
    c = small
    c.cli("workspace", "create", "vision", check=True)
    c.cli("project", "create", "vision", "detect", check=True)
    placed = c.cli("cmd", "run", "-d", "--config", "workspace=vision", "--config", "project=detect", "true",
                   check=True)
    plain = c.cli("cmd", "run", "-d", "true", check=True)
    ids = [int(re.search(r"Launched command (\d+)", r.stdout).group(1)) for r in (placed, plain)]
    rows = {int(r["ID"]): r for r in csv.DictReader(io.StringIO(c.cli("cmd", "list", "--csv", check=True).stdout))}
    assert (rows[ids[0]]["Workspace"], rows[ids[0]]["Project"]) == ("vision", "detect")
    assert (rows[ids[1]]["Workspace"], rows[ids[1]]["Project"]) == ("Uncategorized", "Uncategorized")
    tasks = {t["id"]: t for t in json.loads(c.cli("cmd", "list", "--json", check=True).stdout)["tasks"]}
    assert (tasks[ids[0]]["workspace"], tasks[ids[0]]["project"]) == ("vision", "detect")
    table = c.cli("cmd", "list", check=True).stdout
    assert "Workspace" in table and "Project" in table and "vision" in table and "detect" in table
    for cmd_id in ids:  # their slot is free again for the next test
        c.wait_for(lambda cmd_id=cmd_id: _ended(c, cmd_id), what=f"command {cmd_id} to end")


def test_trial_logs_follow_with_a_tail_prints_the_last_lines_then_the_new_ones(small, tmp_path):
    c = small
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text(TALKS_THEN_WAITS)
    flag = tmp_path / "go"
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump({
        "name": "talks", "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "environment": {"environment_variables": [f"FLAG={flag}"]}}))
    made = c.cli("e", "create", str(tmp_path / "exp.yaml"), str(ctx), "--json", check=True)
    exp_id = json.loads(made.stdout)["experiment"]["id"]
    trial_id = c.wait_for(lambda: (c.client().get(f"/experiments/{exp_id}")["trials"] or [{}])[0].get("id"),
                          what="the trial")
    c.wait_for(lambda: [e["log"] for e in c.client().stream_lines(f"/trials/{trial_id}/logs", tail=1)] == ["line 5"],
               timeout=120, what="the trial to print its first 5 lines")

    follow = subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", "t", "logs", str(trial_id), "--follow",
                               "--tail", "2"], env=c.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    guard = threading.Timer(120, follow.kill)  # a follow that never prints must not hang the suite
    guard.start()
    try:
        first = [follow.stdout.readline(), follow.stdout.readline()]  # before the trial prints anything new
        flag.touch()
        rest, err = follow.communicate(timeout=120)
    finally:
        guard.cancel()
    assert follow.returncode == 0, err  # it ends with the trial
    assert [re.search(r"line \d", line).group(0) for line in first] == ["line 4", "line 5"], first
    printed = re.findall(r"line \d", "".join(first) + rest)
    assert printed == ["line 4", "line 5", "line 6", "line 7"], first + [rest]

    c.wait_for(lambda: c.client().get(f"/experiments/{exp_id}")["experiment"]["state"] == "COMPLETED",
               what="the experiment to complete")
    runs = json.loads(c.cli("t", "describe", str(trial_id), "--json", check=True).stdout)["runs"]
    assert [r["exit_reason"] for r in runs] == ["COMPLETED"]
