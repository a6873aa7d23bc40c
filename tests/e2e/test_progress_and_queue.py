"""Issue 26 on a real one-slot cluster: an experiment killed at 5% of its budget reads 5% in the CLI, the API, the SDK
and the UI's page models (acceptance 2); a command and an experiment queued behind it say that they are queued, in
which pool, at which place and behind what, with no "lost the connection" line (acceptance 3)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from integration.helpers import create, experiment, wait_state
from stalwart.experimental import client as sdk

pytestmark = pytest.mark.integration

SLEEPER = """
import time
from determined import core

with core.init() as ctx:
    for op in ctx.searcher.operations():
        op.report_progress(20)  # 20 of its 400 batches, then it holds its slot until killed
        print("reported 20 batches", flush=True)
        while True:
            time.sleep(1)
"""
QUICK = """
from determined import core

with core.init() as ctx:
    for op in ctx.searcher.operations():
        op.report_progress(op.length)
        ctx.train.report_validation_metrics(op.length, {"loss": 0.5})
        op.report_completed(0.5)
"""
QUEUED_FOR_S = 35
"""Longer than the CLI's 30 s read timeout, which used to fire on a quiet log stream as "lost the connection"."""


def _config(tmp_path: pathlib.Path, name: str, script: str) -> pathlib.Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "entrypoint": f"python3 {script}", "max_restarts": 0,
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 400}}}))
    return path


def _cli(c, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=c.env, capture_output=True,
                          text=True, timeout=120)


def _start(c, out: pathlib.Path, *args: str) -> subprocess.Popen:
    with out.open("w") as f:  # stdout and stderr in one file, in order
        return subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", *args], env=c.env, stdout=f,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _said(out: pathlib.Path) -> str:
    return " ".join(out.read_text().split())  # however a line was wrapped


def _progress_everywhere(c, exp_id: int, monkeypatch) -> dict[str, float]:
    """The experiment's progress as the CLI, the API, the SDK and the UI's page models give it."""
    listed = json.loads(_cli(c, "e", "list", "--all", "--json").stdout)["experiments"]
    described = json.loads(_cli(c, "e", "describe", str(exp_id), "--json").stdout)
    api = c.client()
    ui_list = api.get("/ui/experiments", archived="all")["experiments"]
    monkeypatch.setenv("STALWART_HOME", str(c.home))  # the SDK finds the admin's session in the home's auth file
    sdk.login(master=c.url)
    return {
        "cli list": next(e["progress"] for e in listed if e["id"] == exp_id),
        "cli describe": described["experiment"]["progress"],
        "api": experiment(c, exp_id)["experiment"]["progress"],
        "sdk": sdk.get_experiment(exp_id).progress,
        "ui list": next(e["progress"] for e in ui_list if e["id"] == exp_id),
        "ui page": api.get(f"/ui/experiments/{exp_id}")["experiment"]["progress"],
    }


def test_killed_at_five_percent_and_queued_behind_it(cluster, tmp_path, monkeypatch):
    c = cluster
    ctx = tmp_path / "context"
    ctx.mkdir()
    (ctx / "sleeper.py").write_text(textwrap.dedent(SLEEPER))
    (ctx / "quick.py").write_text(textwrap.dedent(QUICK))
    exp_id = create(c, _config(tmp_path, "sleeper", "sleeper.py").read_text(), ctx)
    c.wait_for(lambda: experiment(c, exp_id)["experiment"]["progress"] > 0, timeout=180,
               what="the trial to report 20 of 400 batches")

    # the experiment holds the only slot: a command and a followed experiment queue behind it
    started = time.monotonic()
    cmd_out, exp_out = tmp_path / "cmd.out", tmp_path / "follow.out"
    cmd = _start(c, cmd_out, "cmd", "run", "true")
    follow = _start(c, exp_out, "e", "create", str(_config(tmp_path, "quick", "quick.py")), str(ctx), "--follow")
    try:
        c.wait_for(lambda: "is queued" in _said(cmd_out) and "is queued" in _said(exp_out), timeout=90,
                   what="both to say they are queued")
        time.sleep(max(0.0, QUEUED_FOR_S - (time.monotonic() - started)))
        assert cmd.poll() is None and follow.poll() is None
        assert _cli(c, "e", "kill", str(exp_id)).returncode == 0
        assert cmd.wait(timeout=120) == 0, cmd_out.read_text()
        assert follow.wait(timeout=180) == 0, exp_out.read_text()
    finally:
        for proc in (cmd, follow):
            if proc.poll() is None:
                proc.kill()
    said_cmd, said_exp = _said(cmd_out), _said(exp_out)
    assert "queued in pool default, place 2 in its queue" in said_cmd, said_cmd
    assert f"held by experiment {exp_id} (sleeper): 1 slot" in said_cmd, said_cmd
    assert "ended: COMPLETED" in said_cmd, said_cmd
    assert "is queued in pool default, place " in said_exp and f"held by experiment {exp_id}" in said_exp, said_exp
    assert "ended COMPLETED" in said_exp, said_exp
    for said in (said_cmd, said_exp):
        assert "lost the connection" not in said and "reconnecting" not in said, said

    wait_state(c, exp_id, "CANCELED")
    seen = _progress_everywhere(c, exp_id, monkeypatch)
    assert all(abs(p - 0.05) <= 0.01 for p in seen.values()), seen
    listing = _cli(c, "e", "list", "--all").stdout
    row = next((line for line in listing.splitlines() if "sleeper" in line), "")
    assert "CANCELED" in row and "5%" in row and "100%" not in row, listing
