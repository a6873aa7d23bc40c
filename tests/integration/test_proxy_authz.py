"""Who may pass the task proxy, and what reaches the task's service (issue 32, acceptance 7), on the conformance
world (integration/authz_world.py: rbac, callers with each role on workspace W, the admin owning W's command K).

K's allocation runs on the world's agent, which the test plays: it reports K started and its server (the recording
service, stalwart.testing.recording_service) listening, as `stalwart.harness.service` does. Then every caller kind
but the owner, a ClusterAdmin too, is refused (403 naming the owner) over HTTP and at the WebSocket handshake; the
owner's calls reach the service with neither the master's cookies nor the caller's `Authorization`, and with the
service's own token in its place; a cookie-borne change must come from the master's own pages.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import authz_world as aw
import httpx
import pytest
import sqlalchemy as sa
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from stalwart.db import tables as t
from stalwart.master.identity import tokens
from stalwart.testing.recording_service import Received, recording_service

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[aw.World, str, Received, str]]:
    """(the world, K's proxy id, what K's server received, K's allocation id)."""
    home = tmp_path_factory.mktemp("proxy-authz")
    with recording_service() as (service, received):
        for world in aw.build(home, f"sqlite:///{home / 'm.db'}"):
            cmd_id = world.new_command()
            allocation_id = _placed(world, cmd_id)
            aw.ok(httpx.post(f"{world.url}/api/v1/allocations/{allocation_id}/started", headers=world.agent_headers,
                             json={"agent_id": "a0", "pid": 4242}))
            aw.ok(httpx.post(f"{world.url}/api/v1/allocations/{allocation_id}/service", json={"port": service.port},
                             headers={tokens.ALLOCATION_HEADER: world.master.allocation_token(allocation_id)}))
            yield world, f"command-{cmd_id}", received, allocation_id


def _placed(world: aw.World, cmd_id: int) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with world.master.db.begin() as conn:
            found = conn.execute(sa.select(t.allocations.c.id).where(t.allocations.c.command_id == cmd_id)).scalar()
        if found is not None:
            return str(found)
        time.sleep(0.1)
    raise AssertionError(f"command {cmd_id} got no allocation")


def _handshake(world: aw.World, path: str, headers: dict[str, str]) -> int:
    """The status of a WebSocket handshake to `path` (101: accepted)."""

    try:
        with connect(world.url.replace("http", "ws", 1) + path, additional_headers=headers) as ws:
            ws.send("ping")
            assert ws.recv() == "ping"
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


def _credentials(client: httpx.Client) -> dict[str, str]:
    return {"Authorization": client.headers["authorization"]}


@pytest.mark.parametrize("caller", list(aw.CALLERS))
def test_no_one_but_the_owner_opens_a_task_not_even_a_cluster_admin(served, caller: str) -> None:
    world, task, received, _ = served
    before = len(received.requests)
    client = world.callers[caller]
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        reply = client.request(method, f"/proxy/{task}/echo", content=b"{}")
        assert reply.status_code == 403, (caller, method, reply.status_code, reply.text)
        assert "only admin, who started" in reply.json()["error"]["message"]
    assert _handshake(world, f"/proxy/{task}/ws", _credentials(client)) == 403
    assert len(received.requests) == before  # nothing reached the service


def test_the_owner_reaches_the_service_with_its_token_and_none_of_the_masters_credentials(served) -> None:
    world, task, received, allocation_id = served
    reply = world.admin.post(f"/proxy/{task}/echo?x=1", content=b"hello",
                             headers={"Cookie": "_xsrf=service-own", "X-Probe": "kept"})
    assert reply.status_code == 200, reply.text
    seen = received.requests[-1]["headers"]
    assert seen["authorization"] == f"token {tokens.service_token(world.master.secret, allocation_id)}"
    assert seen["cookie"] == "_xsrf=service-own" and seen["x-probe"] == "kept"
    assert received.requests[-1]["body"] == "hello" and received.requests[-1]["path"] == f"/proxy/{task}/echo"
    assert _handshake(world, f"/proxy/{task}/ws", _credentials(world.admin)) == 101
    assert received.requests[-1]["headers"]["authorization"].startswith("token ")


def test_a_cookie_session_changes_things_only_from_the_masters_own_pages(served) -> None:
    world, task, received, _ = served
    with httpx.Client(base_url=world.url, timeout=30, follow_redirects=False) as browser:
        signed_in = browser.post("/login", data={"username": "admin", "password": "", "next": "/"})
        assert signed_in.status_code in (302, 303), signed_in.text
        assert browser.get(f"/proxy/{task}/echo").status_code == 200  # reading needs no Origin
        refused = browser.post(f"/proxy/{task}/echo", content=b"x")  # no Origin: a page of another site could
        assert refused.status_code == 403 and "Origin" in refused.text
        host = world.url.removeprefix("http://")
        assert browser.post(f"/proxy/{task}/echo", content=b"x", headers={"Origin": "http://evil.example"}
                            ).status_code == 403
        passed = browser.post(f"/proxy/{task}/echo", content=b"x", headers={"Origin": f"http://{host}"})
        assert passed.status_code == 200, passed.text
        seen = received.requests[-1]["headers"]
        assert "stalwart_session" not in seen.get("cookie", "") and "stalwart_csrf" not in seen.get("cookie", "")
        cookie = "; ".join(f"{k}={v}" for k, v in browser.cookies.items())
        assert _handshake(world, f"/proxy/{task}/ws", {"Cookie": cookie}) == 403  # no Origin
        assert _handshake(world, f"/proxy/{task}/ws", {"Cookie": cookie, "Origin": f"http://{host}"}) == 101


def test_no_session_unknown_tasks_and_tasks_that_serve_nothing_get_clear_answers(served) -> None:
    world, task, _, _ = served
    assert httpx.get(f"{world.url}/proxy/{task}/echo").status_code == 401
    unknown = world.admin.get("/proxy/notebook-999999/lab")
    assert unknown.status_code == 404 and "notebook-999999" in unknown.text
    assert world.admin.get("/proxy/bogus/lab").status_code == 404
    idle = f"command-{world.new_command()}"
    waiting = world.admin.get(f"/proxy/{idle}/lab")
    assert waiting.status_code == 409 and "serves nothing now" in waiting.text


def test_only_a_task_s_own_allocation_reports_its_server(served) -> None:
    world, _, _, allocation_id = served
    other = world.allocations["E"]  # a trial's allocation, live
    refused = httpx.post(f"{world.url}/api/v1/allocations/{allocation_id}/service", json={"port": 1234},
                         headers={tokens.ALLOCATION_HEADER: world.master.allocation_token(other)})
    assert refused.status_code == 403
    trial = httpx.post(f"{world.url}/api/v1/allocations/{other}/service", json={"port": 1234},
                       headers={tokens.ALLOCATION_HEADER: world.master.allocation_token(other)})
    assert trial.status_code == 409 and "only tasks" in trial.text
    bad = httpx.post(f"{world.url}/api/v1/allocations/{allocation_id}/service", json={"port": 70000},
                     headers={tokens.ALLOCATION_HEADER: world.master.allocation_token(allocation_id)})
    assert bad.status_code == 400 and "port" in bad.text
