"""The CLI as a user types it: zero-setup local cluster, create --follow, list/describe/logs/checkpoints, down."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import httpx
import pytest

from stalwart.testing import free_port

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[2]
DIGITS = REPO / "examples" / "digits"


@pytest.fixture
def user_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("STALWART_MASTER", "DET_MASTER")}
    env["STALWART_HOME"] = str(tmp_path / "stalwart-home")
    yield env
    subprocess.run([sys.executable, "-m", "stalwart.cli.main", "down"], env=env, capture_output=True, timeout=60)


def run(env, *args, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def test_zero_setup_user_journey(user_env, tmp_path):
    # No master configured and none running: the first command starts the local one and says so.
    port = free_port()
    res = run(user_env, "up", "--port", str(port))
    assert res.returncode == 0, res.stderr
    assert f"http://127.0.0.1:{port}" in res.stdout

    res = run(user_env, "experiment", "create", str(DIGITS / "const.yaml"), str(DIGITS), "--follow")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Created experiment 1" in res.stdout
    assert "final validation_accuracy=" in res.stdout
    assert "Experiment 1 ended COMPLETED" in res.stdout
    acc = float(res.stdout.split("final validation_accuracy=")[1].split()[0])
    assert acc >= 0.9

    listing = run(user_env, "e", "list")
    assert listing.returncode == 0 and "digits-mlp" in listing.stdout and "COMPLETED" in listing.stdout
    described = json.loads(run(user_env, "e", "describe", "1", "--json").stdout)
    assert described["experiment"]["state"] == "COMPLETED"
    best = described["experiment"]["best_validation"]
    assert best["metric"] == "validation_accuracy" and best["value"] >= acc - 1e-6
    assert "Best validation" in run(user_env, "e", "describe", "1").stdout
    trial_id = described["trials"][0]["id"]
    assert run(user_env, "e", "wait", "1", "--polling-interval", "0.2").returncode == 0
    assert "COMPLETED" in run(user_env, "e", "lt", "1").stdout
    logs = run(user_env, "trial", "logs", str(trial_id))
    assert logs.returncode == 0 and "validation at steps_completed=400" in logs.stdout
    assert run(user_env, "t", "logs", str(trial_id), "--follow").returncode == 0  # ends: the trial is over
    trial = run(user_env, "t", "describe", str(trial_id))
    assert trial.returncode == 0 and "COMPLETED" in trial.stdout and "EXITED" not in trial.stdout

    ckpts = json.loads(run(user_env, "e", "list-checkpoints", "1", "--json").stdout)["checkpoints"]
    uuid = [c for c in ckpts if c["state"] == "COMPLETED"][-1]["uuid"]
    desc = json.loads(run(user_env, "checkpoint", "describe", uuid, "--json").stdout)
    assert desc["metadata"]["steps_completed"] == desc["steps_completed"]
    out = tmp_path / "ckpt"
    for mode in ("direct", "master"):
        res = run(user_env, "c", "download", uuid, "-o", str(out / mode), "--mode", mode)
        assert res.returncode == 0, res.stderr
        assert (out / mode / "state.pt").is_file() and (out / mode / "metadata.json").is_file()

    agents = run(user_env, "agent", "list", "--json")
    assert json.loads(agents.stdout)["agents"][0]["slots"] >= 1

    res = run(user_env, "down")
    assert res.returncode == 0 and "Stopped" in res.stdout
    res = run(user_env, "-m", f"http://127.0.0.1:{port}", "e", "list")
    assert res.returncode == 6 and "cannot reach the master" in res.stderr and "Traceback" not in res.stderr


def test_first_command_starts_the_local_cluster_when_none_is_configured(user_env):
    res = run(user_env, "e", "list")
    assert res.returncode == 0, res.stderr
    assert "No master configured" in res.stderr and "starting a local cluster" in res.stderr
    again = run(user_env, "e", "list")
    assert again.returncode == 0 and "No master configured" not in again.stderr


def test_wait_exits_nonzero_unless_completed(user_env, tmp_path):
    assert run(user_env, "up", "--port", str(free_port())).returncode == 0
    res = run(user_env, "e", "create", str(DIGITS / "const.yaml"), str(DIGITS), "--paused",
              "--config", "name=renamed", "--config", "hyperparameters.hidden=32", "--config", "labels=a,b")
    assert res.returncode == 0 and "PAUSED" in res.stdout and "renamed" in res.stdout
    described = json.loads(run(user_env, "e", "describe", "1", "--json").stdout)
    assert described["config"]["hyperparameters"]["hidden"] == {"type": "const", "val": 32}
    assert described["experiment"]["labels"] == ["a", "b"]
    res = run(user_env, "e", "create", str(DIGITS / "const.yaml"), str(DIGITS), "--config", "novalue")
    assert res.returncode == 2 and "novalue" in res.stderr
    grid = tmp_path / "grid.yaml"
    grid.write_text((DIGITS / "const.yaml").read_text().replace("name: single", "name: grid").replace(
        "hidden: 64", "hidden: {type: int, minval: 16, maxval: 64, count: 3}"))
    res = run(user_env, "preview-search", str(grid))
    assert res.returncode == 0 and "create a total of 3 trial(s)" in res.stdout, res.stdout + res.stderr
    assert run(user_env, "e", "list", "--json").stdout.count('"id"') == 1  # nothing was created
    assert run(user_env, "e", "kill", "1").returncode == 0
    res = run(user_env, "e", "wait", "1", "--polling-interval", "0.2")
    assert res.returncode == 1 and "CANCELED" in res.stdout


def test_up_foreground_serves_until_interrupted(user_env, tmp_path):
    port = free_port()

    def tail() -> str:
        return (tmp_path / "foreground.log").read_text(errors="replace")[-3000:]

    with open(tmp_path / "foreground.log", "wb") as out:  # a file, not unread pipes that could fill up
        proc = subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", "up", "--foreground", "--port", str(port)],
                                env=user_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 150  # generous: CI runs this beside DDP gangs and browsers on 2 cores
        while time.monotonic() < deadline:
            res = run(user_env, "-m", f"127.0.0.1:{port}", "agent", "list", "--json", timeout=60)
            if res.returncode == 0 and json.loads(res.stdout)["agents"]:
                break
            assert proc.poll() is None, f"up --foreground exited with {proc.returncode}:\n{tail()}"
            time.sleep(0.5)
        else:
            raise AssertionError(f"the foreground cluster did not come up; its output:\n{tail()}")
        spec = httpx.get(f"http://127.0.0.1:{port}/api/v1/openapi.json", timeout=30).json()
        assert "/api/v1/experiments" in spec["paths"] and spec["info"]["title"] == "Stalwart master"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise AssertionError(f"up --foreground did not stop within 60 s of Ctrl-C; its output:\n{tail()}") from None
    assert proc.returncode in (0, 130), tail()
    assert run(user_env, "-m", f"127.0.0.1:{port}", "e", "list").returncode == 6


def test_test_mode_on_the_cluster_and_locally(user_env):
    assert run(user_env, "up", "--port", str(free_port())).returncode == 0
    core_api = REPO / "examples" / "determined" / "core_api"
    res = run(user_env, "e", "create", str(DIGITS / "const.yaml"), str(DIGITS), "--test-mode")
    assert res.returncode == 0, res.stdout + res.stderr
    for stage in ("Scheduling", "Training", "Validation", "Checkpointing"):
        assert f"✔ {stage}" in res.stdout
    res = run(user_env, "e", "create", str(core_api / "const.yaml"), str(core_api), "-t",
              "--config", "hyperparameters.invalid=true")
    assert res.returncode == 1 and "✘ Training failed" in res.stdout and "InvalidHP" in res.stdout
    res = run(user_env, "e", "create", str(core_api / "const.yaml"), str(core_api), "-t", "--local")
    assert res.returncode == 0 and "Local test passed" in res.stdout
    broken = REPO / "tests" / "e2e" / "broken_context"
    res = run(user_env, "e", "create", str(broken / "const.yaml"), str(broken), "-t", "--local")
    assert res.returncode == 1 and "ZeroDivisionError" in res.stderr and "Local test failed" in res.stdout
    res = run(user_env, "e", "create", str(broken / "const.yaml"), str(broken), "-t")
    assert res.returncode == 1 and "ZeroDivisionError" in res.stdout  # the traceback, from the trial's log
