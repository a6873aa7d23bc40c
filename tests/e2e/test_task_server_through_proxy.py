"""A task's server, reached through the master (issue 32): a real master and agent, a command whose entrypoint is
`stalwart.harness.service` starting the recording service (stalwart.testing.recording_service) on a free port.

The server's port reaches the master only once it answers; then HTTP and a WebSocket pass through
`/proxy/command-<id>/`, the server sees the service token and none of the caller's credentials, and killing the
task takes its server down with it (its port stops answering).
"""

from __future__ import annotations

import re
import socket

import httpx
import pytest
from websockets.sync.client import connect

from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

SERVER = ["python3", "-m", "stalwart.harness.service", "--",
          "python3", "-m", "stalwart.testing.recording_service", "{port}"]


def _port_of(c: LocalTestCluster, cmd_id: str) -> int | None:
    found = re.search(r"listens on port (\d+)", c.cli("cmd", "logs", cmd_id).stdout)
    return int(found.group(1)) if found else None


def _state(c: LocalTestCluster, cmd_id: str, auth: dict[str, str]) -> str:
    return str(httpx.get(f"{c.url}/api/v1/commands/{cmd_id}", headers=auth).json()["command"]["state"])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def test_a_task_s_server_is_reached_through_the_master_and_dies_with_its_task(tmp_path) -> None:
    with LocalTestCluster(tmp_path / "home") as c:
        made = c.cli("cmd", "run", "-d", "--config", "resources.slots=0", *SERVER, check=True)
        cmd_id = re.search(r"Launched command (\d+)", made.stdout).group(1)
        port = c.wait_for(lambda: _port_of(c, cmd_id), timeout=120, what="the server to report its port")
        base = f"{c.url}/proxy/command-{cmd_id}"
        admin = {"Authorization": f"Bearer {c.admin_token}"}
        described = httpx.get(f"{c.url}/api/v1/commands/{cmd_id}", headers=admin).json()["command"]
        assert described["kind"] == "command" and described["proxy_path"] == f"/proxy/command-{cmd_id}/"

        seen = httpx.get(f"{base}/echo?q=1", headers={**admin, "Cookie": "stalwart_session=x; own=1"}).json()
        assert seen["path"] == f"/proxy/command-{cmd_id}/echo" and seen["query"] == "q=1"
        assert seen["headers"]["authorization"].startswith("token ") and c.admin_token not in str(seen)
        assert seen["headers"]["cookie"] == "own=1"
        assert len(httpx.get(f"{base}/bytes/{3 * 2**20}", headers=admin).content) == 3 * 2**20

        with connect(f"ws{base.removeprefix('http')}/ws", additional_headers=admin) as ws:
            ws.send("through the master")
            assert ws.recv() == "through the master"
        assert httpx.get(f"{base}/echo").status_code == 401  # no credentials: nothing reaches the server

        c.cli("cmd", "kill", cmd_id, check=True)
        c.wait_for(lambda: _state(c, cmd_id, admin) != "ACTIVE" or None, timeout=60, what="the task to end")
        c.wait_for(lambda: not _answers(port) or None, timeout=30, what="the server to stop with its task")
        assert httpx.get(f"{c.url}/api/v1/commands/{cmd_id}", headers=admin).json()["command"].get("proxy_path") is None
        gone = httpx.get(f"{base}/echo", headers=admin)
        assert gone.status_code == 409 and "serves nothing now" in gone.text
