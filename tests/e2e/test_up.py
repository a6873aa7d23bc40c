"""`stalwart up` and `down` as a new user meets them: bad options, a port held by another cluster, a failing
agent, and coming back after crashes without running anything twice."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest
import yaml

from integration.process_watch import DoubleRunWatcher, running, trial_processes
from stalwart.testing import free_port

pytestmark = pytest.mark.integration

FAULTS = pathlib.Path(__file__).resolve().parents[1] / "integration" / "faults"


def env_for(home: pathlib.Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("STALWART_MASTER", "DET_MASTER")}
    env["STALWART_HOME"] = str(home)
    return env


def run(env, *args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def homes(tmp_path):
    made = []

    def make(name: str) -> dict:
        env = env_for(tmp_path / name)
        made.append(env)
        return env

    yield make
    for env in made:
        run(env, "down", timeout=60)


def record(env) -> dict:
    return json.loads((pathlib.Path(env["STALWART_HOME"]) / "local-cluster.json").read_text())


def test_up_refuses_invalid_options_before_starting_anything(homes):
    env = homes("a")
    for args, field in ((["--slots", "-1"], "--slots"), (["--port", "70000"], "--port")):
        res = run(env, "up", *args)
        assert res.returncode == 2, res.stdout + res.stderr
        assert field in res.stderr and "expected" in res.stderr
    assert not pathlib.Path(env["STALWART_HOME"]).exists()  # nothing was started, nothing written


def test_up_on_a_port_another_clusters_master_holds_fails_and_joins_nothing(homes):
    port = str(free_port())
    first, second = homes("first"), homes("second")
    assert run(first, "up", "--port", port).returncode == 0
    res = run(second, "up", "--port", port)
    assert res.returncode == 4, res.stdout + res.stderr
    assert f"port {port} is already in use by another Stalwart master" in res.stderr
    assert "Master running" not in res.stdout
    assert not (pathlib.Path(second["STALWART_HOME"]) / "local-cluster.json").exists()
    # and a command in the second home does not go into the first cluster: it starts its own
    listing = run(second, "e", "list", "--json")
    assert listing.returncode == 0 and record(second)["port"] != int(port)


def test_up_fails_showing_the_agents_error_when_its_agent_cannot_start(homes):
    env = homes("broken")
    home = pathlib.Path(env["STALWART_HOME"])
    home.mkdir()
    (home / "agent").write_text("not a directory")  # the agent's work directory cannot be created
    res = run(env, "up", "--port", str(free_port()))
    assert res.returncode != 0, res.stdout + res.stderr
    assert "the local agent exited" in res.stderr
    assert "cannot use it as the agent's work directory" in res.stderr


def test_up_with_a_container_runtime_whose_engine_is_down_names_its_socket_and_down_forgets_it(homes, tmp_path):
    env = homes("containers")
    env["DOCKER_HOST"] = f"unix://{tmp_path}/docker.sock"  # no engine listens there
    res = run(env, "up", "--runtime", "docker", "--port", str(free_port()))
    assert res.returncode != 0, res.stdout + res.stderr
    message = " ".join(res.stderr.split())
    assert "the local agent exited" in message
    assert f"no Docker engine answers at unix://{tmp_path}/docker.sock (no such socket)" in message
    assert record(env)["runtime"] == "docker"
    assert run(env, "down").returncode == 0
    res = run(env, "up")  # `down` forgot the runtime: processes again
    assert res.returncode == 0, res.stdout + res.stderr
    assert record(env)["runtime"] == "process"


def test_up_after_crashes_reuses_what_survived_and_down_leaves_nothing(homes, tmp_path):
    env = homes("crashy")
    ledger = tmp_path / "ledger"
    marker = f"LEDGER={ledger}"
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump({
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "score", "smaller_is_better": False, "max_length": 1500},
        "environment": {"environment_variables": [marker, "STEP_SECONDS=0.1"]},
    }))  # a trial of 150 s, still running when down stops it, however slowly a loaded machine restarts the master
    assert run(env, "up", "--port", str(free_port())).returncode == 0
    first = record(env)
    watcher = DoubleRunWatcher(marker)
    watcher.start()
    assert run(env, "e", "create", str(tmp_path / "exp.yaml"), str(FAULTS)).returncode == 0
    pids = _wait(lambda: trial_processes(marker).get(1), "the trial to run")

    os.kill(first["master_pid"], signal.SIGKILL)
    res = run(env, "up")
    assert res.returncode == 0, res.stderr
    second = record(env)
    # the documented way back: the same port, the same agent, and its trial went on running all along
    assert second["port"] == first["port"] and second["agent_pid"] == first["agent_pid"]
    assert second["master_pid"] != first["master_pid"]
    assert all(running(p) for p in pids)

    os.kill(second["agent_pid"], signal.SIGKILL)
    assert run(env, "up").returncode == 0
    third = record(env)
    assert third["agent_pid"] != second["agent_pid"] and third["master_pid"] == second["master_pid"]
    _wait(lambda: not any(running(p) for p in pids), "the dead agent's trial to be gone")
    _wait(lambda: trial_processes(marker).get(1), "the trial to run again")

    res = run(env, "down")
    assert res.returncode == 0 and "Stopped" in res.stdout
    watcher.stop()
    assert watcher.doubles == []
    left = [p for p in (third["master_pid"], third["agent_pid"], *trial_processes(marker).get(1, [])) if running(p)]
    assert left == []
    runs = [r["exit_reason"] for r in _runs(tmp_path, env)]
    assert runs[:1] == ["AGENT_LOST"]


def _runs(tmp_path, env) -> list[dict]:
    """The trial's runs, read with the cluster up again (down ended it)."""
    assert run(env, "up").returncode == 0
    res = run(env, "trial", "describe", "1", "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["runs"]


def _wait(predicate, what: str, timeout: float = 60):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
