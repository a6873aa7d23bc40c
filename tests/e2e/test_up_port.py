"""`stalwart up` of a stopped local cluster comes back on the port it had (every bookmark of its URL keeps working);
when something else holds that port now, it says so and starts nothing rather than moving silently."""

from __future__ import annotations

import pathlib
import socket

import pytest

from e2e.test_up import homes, record, run  # noqa: F401 - `homes` is the fixture these tests use
from stalwart.testing import free_port

pytestmark = pytest.mark.integration


def _up(env: dict) -> int:
    """`stalwart up` with no --port; the port it serves on."""
    res = run(env, "up")
    assert res.returncode == 0, res.stdout + res.stderr
    return record(env)["port"]


def test_up_after_down_serves_on_the_port_it_had(homes):  # noqa: F811 - the imported fixture
    env = homes("kept")
    port = free_port()
    res = run(env, "up", "--port", str(port))
    assert res.returncode == 0, res.stdout + res.stderr
    assert run(env, "down").returncode == 0
    assert _up(env) == port  # no --port: the same URL as before
    assert run(env, "down").returncode == 0
    moved = free_port()  # moved on purpose: the new port is the one kept from then on
    assert run(env, "up", "--port", str(moved)).returncode == 0
    assert run(env, "down").returncode == 0
    assert _up(env) == moved


def test_up_says_so_when_the_port_it_had_is_taken_and_moves_nowhere(homes):  # noqa: F811
    env = homes("taken")
    port = free_port()
    assert run(env, "up", "--port", str(port)).returncode == 0
    assert run(env, "down").returncode == 0
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other:  # another program takes the port meanwhile
        other.bind(("127.0.0.1", port))
        other.listen()
        res = run(env, "up")
    assert res.returncode == 4, res.stdout + res.stderr
    assert f"port {port}, where this home's cluster listened before" in res.stderr
    assert "in use by another program" in res.stderr and "stalwart up --port N" in res.stderr
    assert "Traceback" not in res.stderr and "Master running" not in res.stdout
    assert not (pathlib.Path(env["STALWART_HOME"]) / "local-cluster.json").exists()
    assert _up(env) == port  # once the port is free again, the cluster is back where it was
