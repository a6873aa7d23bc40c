"""`stalwart agent run --runtime/--engine-url/--harness-bundles` and its config file's keys: an unknown runtime is
refused listing the choices, a container runtime whose engine does not answer keeps the agent from starting with
its socket and how to start it, a flag wins over the config file; `agent harness-bundle` builds bundles ahead."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

import pytest

from stalwart.agent.harness_bundle import MANIFEST

NO_MASTER = "http://127.0.0.1:9"  # nothing listens on the discard port


def stalwart(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def agent_run(tmp_path: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return stalwart("agent", "run", "--master", NO_MASTER, "--token", "t", "--work-dir", str(tmp_path / "work"),
                    *args)


def agent_config(tmp_path: pathlib.Path, text: str) -> str:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("command", [["agent", "run", "--master", NO_MASTER, "--token", "t"], ["up"]])
def test_an_unknown_runtime_flag_is_refused_listing_the_choices(command: list[str]) -> None:
    res = stalwart(*command, "--runtime", "kubernetes")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Invalid value for '--runtime': 'kubernetes' is not one of 'process', 'docker', 'podman'" in res.stderr


def test_an_unknown_runtime_in_the_config_file_is_refused_naming_the_key(tmp_path: pathlib.Path) -> None:
    res = agent_run(tmp_path, "--config", agent_config(tmp_path, "runtime: kubernetes\n"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "runtime: expected one of process, docker, podman, got 'kubernetes'" in res.stderr
    assert not (tmp_path / "work").exists()


def test_the_config_files_runtime_and_engine_are_used_and_a_silent_engine_stops_the_agent(
        tmp_path: pathlib.Path) -> None:
    socket = tmp_path / "docker.sock"
    config = agent_config(tmp_path, f"runtime: docker\ncontainer_engine_url: unix://{socket}\n")
    res = agent_run(tmp_path, "--config", config)
    assert res.returncode == 4, res.stdout + res.stderr
    message = " ".join(res.stderr.split())  # the console wraps long lines
    assert f"the agent's runtime is docker, but no Docker engine answers at unix://{socket} (no such socket)" in message
    assert "systemctl start docker" in message and "--engine-url" in message
    assert "The agent did not start" in message
    assert not (tmp_path / "work" / "agent-state.json").exists()  # it never took its work directory


def test_podman_without_its_service_says_how_to_start_it(tmp_path: pathlib.Path) -> None:
    socket = tmp_path / "podman.sock"
    socket.write_text("")  # a file, not a listening socket
    res = agent_run(tmp_path, "--runtime", "podman", "--engine-url", str(socket))  # a bare path: a unix socket
    assert res.returncode == 4, res.stdout + res.stderr
    message = " ".join(res.stderr.split())
    assert f"no Podman engine answers at unix://{socket} (connection refused: nothing listens there)" in message
    assert "podman system service --time=0 unix:///run/podman/podman.sock" in message
    assert "systemctl --user start podman.socket" in message


def assert_the_agent_starts(tmp_path: pathlib.Path, *args: str) -> None:
    """`agent run ARGS` gets past its checks: it takes its work directory (then waits for the absent master)."""
    with open(tmp_path / "agent.log", "w") as log:
        agent = subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", "agent", "run", "--master", NO_MASTER,
                                  "--token", "t", "--work-dir", str(tmp_path / "work"), *args], stdout=log,
                                 stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while agent.poll() is None and time.monotonic() < deadline:
            if (tmp_path / "work" / "agent-state.json").exists():  # started: it holds its work directory
                break
            time.sleep(0.1)
        assert agent.poll() is None, (tmp_path / "agent.log").read_text()
        assert (tmp_path / "work" / "agent-state.json").exists()
    finally:
        agent.terminate()
        agent.wait(30)


def test_the_runtime_flag_wins_over_the_config_file(tmp_path: pathlib.Path) -> None:
    config = agent_config(tmp_path, f"runtime: docker\ncontainer_engine_url: unix://{tmp_path}/none.sock\n")
    assert_the_agent_starts(tmp_path, "--config", config, "--runtime", "process")


@pytest.mark.parametrize("runtime", ["docker", "podman"])
def test_an_agent_starts_on_an_engine_that_answers(tmp_path: pathlib.Path, request: pytest.FixtureRequest,
                                                   runtime: str) -> None:
    url = request.getfixturevalue(f"{runtime}_url")  # this run's dockerd or Podman service (tests/container_servers)
    assert_the_agent_starts(tmp_path, "--config", agent_config(tmp_path, f"container_engine_url: {url}\n"),
                            "--runtime", runtime)


def test_harness_bundle_builds_ahead_and_refuses_an_unsupported_python(tmp_path: pathlib.Path) -> None:
    res = stalwart("agent", "harness-bundle", "--python", "3.10", "--dest", str(tmp_path))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "--python: Python '3.10' is not a version Stalwart's harness supports; supported: 3.11, 3.12, 3.13" in (
        " ".join(res.stderr.split()))
    own = f"{sys.version_info[0]}.{sys.version_info[1]}"
    res = stalwart("agent", "harness-bundle", "--python", own, "--dest", str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    label, _, built = res.stdout.strip().partition(": ")
    assert label == f"Python {own}"
    assert pathlib.Path(built).parent == tmp_path
    assert json.loads((pathlib.Path(built) / MANIFEST).read_text())["python"] == own
