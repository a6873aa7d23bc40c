"""The caller is known before the body is read (issue 25, hole 9): `master/early_auth.py` on the real app.

A request that names no valid caller gets its 401/403 ErrorBody without the master pulling one chunk of its
body; an open route (signing in) takes at most 64 KiB; the callers the route allows pass as before. The
matcher that finds a request's route-table entry must agree with the app's router on every route.
"""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.routing import compile_path

from helpers_auth import bearer, log_in
from stalwart.api.routes_table import HTML, ROUTES
from stalwart.master.app import create_app
from stalwart.master.early_auth import OPEN_BODY_MAX, RouteMatcher
from stalwart.master.identity import sessions, tokens
from stalwart.master.settings import MasterSettings
from unit.master.async_helpers import run_fresh

CHUNK = 64 * 1024


@pytest.fixture
def app(tmp_path):
    return create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, ui_metrics_index=False))


class Upload:
    """A streamed body of `chunks` chunks that counts how many of them the master pulled."""

    def __init__(self, chunks: int = 64) -> None:
        self.chunks = chunks
        self.pulled = 0

    async def __aiter__(self):
        for _ in range(self.chunks):
            self.pulled += 1
            yield b" " * CHUNK


def _post(app, path: str, content, headers: dict[str, str] | None = None) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://master") as client:
            return await client.post(path, content=content, headers={"content-type": "application/json",
                                                                     **(headers or {})})

    return run_fresh(go)


def _instance(template: str) -> str:
    """A request path of a template: each path value `1`, a `{x:path}` value `a/b`."""
    return re.sub(r"\{\w+:path\}", "a/b", re.sub(r"\{\w+\}", "1", template))


def test_the_matcher_finds_an_entry_whose_auth_kinds_every_matching_template_shares(app) -> None:
    """Where templates overlap (`/experiments/{id}/move` and `/experiments/{id}/{action}`), the router picks by
    registration order and the matcher by table order: harmless only while all of them share their auth kinds."""
    matcher = RouteMatcher(ROUTES)
    templates = [(spec, compile_path(spec.path)[0]) for spec in ROUTES]
    for spec in ROUTES:
        path = _instance(spec.path)
        found = matcher.match(spec.method, path)
        assert found is not None, f"{spec.method} {path}: no entry"
        matching = [s for s, regex in templates if s.method == spec.method and regex.match(path)]
        assert found in matching
        assert {(s.auth, s.also_auth, s.content_type == HTML) for s in matching} == {
            (found.auth, found.also_auth, found.content_type == HTML)}, (
            f"{spec.method} {path} matches templates of different auth kinds: {[s.path for s in matching]}")
    assert matcher.match("POST", "/api/v1/nothing/here") is None
    assert matcher.match("DELETE", "/api/v1/experiments") is None


@pytest.mark.parametrize(("path", "headers", "status"), [
    ("/api/v1/experiments", {}, 401),  # a user route without a session
    ("/api/v1/experiments", bearer("not-a-session"), 401),
    ("/api/v1/agents", {}, 401),  # agents' routes without the cluster token
    ("/api/v1/agents", bearer("wrong"), 403),
    ("/api/v1/trials/1/metrics", {}, 401),  # a trial's route without its allocation token
    ("/api/v1/trials/1/metrics", {tokens.ALLOCATION_HEADER: "a.b"}, 403),
    ("/api/v1/task/logs", {tokens.ALLOCATION_HEADER: "a.b"}, 403),
])
def test_a_caller_refused_is_answered_before_one_chunk_of_its_body_is_read(app, path, headers, status) -> None:
    upload = Upload()
    reply = _post(app, path, upload, headers)
    assert reply.status_code == status, reply.text
    assert reply.json()["error"]["kind"] == ("unauthenticated" if status == 401 else "forbidden")
    assert upload.pulled == 0


def test_a_cookie_session_without_its_csrf_token_is_refused_before_the_body(app) -> None:
    token = log_in(TestClient(app))
    upload = Upload()
    reply = _post(app, "/api/v1/experiments", upload, {"cookie": f"{sessions.COOKIE}={token}"})
    assert reply.status_code == 403, reply.text
    assert "CSRF" in reply.json()["error"]["message"]
    assert upload.pulled == 0


def test_the_refusal_of_a_user_call_is_audited_as_before(app) -> None:
    http = TestClient(app)
    assert _post(app, "/api/v1/experiments/7/kill", Upload(1)).status_code == 401
    entries = http.get("/api/v1/audit", headers=bearer(log_in(http))).json()["entries"]
    refused = [(e["username"], e["path"], e["target"], e["outcome"]) for e in entries if e["status"] == 401]
    assert (None, "/api/v1/experiments/7/kill", "experiment 7", "refused") in refused


def test_an_allowed_caller_passes_to_the_route(app) -> None:
    token = log_in(TestClient(app))
    reply = _post(app, "/api/v1/experiments", b"{}", bearer(token))
    assert reply.status_code == 400, reply.text  # the handler's own validation: the caller got through
    reply = _post(app, "/api/v1/agents", b'{"agent_id": "a1", "slots": 1}',
                  bearer(app.state.master.cluster_token))
    assert reply.status_code == 200, reply.text


def test_an_open_route_takes_a_small_body_only(app) -> None:
    assert _post(app, "/api/v1/auth/login", b'{"username": "admin", "password": "", "isHashed": false}'
                 ).status_code == 200
    streamed = Upload(32)  # 2 MiB, no Content-Length: counted as it arrives
    reply = _post(app, "/api/v1/auth/login", streamed)
    assert reply.status_code == 413, reply.text
    assert "64 KiB" in reply.json()["error"]["message"]
    assert streamed.pulled <= OPEN_BODY_MAX // CHUNK + 1
    declared = Upload(32)
    reply = _post(app, "/api/v1/auth/login", declared, {"content-length": str(32 * CHUNK)})
    assert reply.status_code == 413, reply.text
    assert declared.pulled == 0
