"""The master's request body limit: refused with a 413 JSON error as the body streams in, never buffered whole."""

from __future__ import annotations

import base64
import json

import httpx
import pytest
from fastapi.testclient import TestClient

from helpers_auth import bearer, log_in
from stalwart.config.master import LimitsConfig, MasterConfig
from stalwart.context import pack_context
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings
from unit.master.async_helpers import run_fresh

MIB = 1024 * 1024
CHUNK = 64 * 1024


@pytest.fixture
def app(tmp_path):
    settings = MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, ui_metrics_index=False,
                              cluster=MasterConfig(limits=LimitsConfig(max_request_body=MIB)))
    return create_app(settings)


def _post(app, content, headers=None) -> httpx.Response:
    """POST /api/v1/experiments as the admin (the route needs a session)."""
    headers = {**(headers or {}), **bearer(log_in(TestClient(app)))}

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://master") as client:
            return await client.post("/api/v1/experiments", content=content, headers=headers)

    return run_fresh(go)


def _expect_413(reply: httpx.Response) -> None:
    assert reply.status_code == 413, reply.text
    assert reply.json() == {"error": {
        "kind": "invalid_request",
        "message": "request body is over the master's 1 MiB limit (limits.max_request_body in the master config: "
                   "raise it there if requests this large are expected)",
        "details": []}}


def _small_create(tmp_path) -> bytes:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print(1)\n")
    return json.dumps({"config": "entrypoint: python3 train.py\nsearcher: {name: single, metric: x, max_length: 1}\n",
                       "context": base64.b64encode(pack_context(ctx).data).decode(), "validate_only": True}).encode()


def test_a_streamed_body_is_refused_once_it_passes_the_limit_without_reading_the_rest(app, tmp_path):
    reply = _post(app, _small_create(tmp_path), {"content-type": "application/json"})  # under the limit: passes
    assert reply.status_code == 200, reply.text
    assert reply.json()["experiment"] is None
    pulled = 0

    async def chunks():  # 20 MiB, chunked (no Content-Length)
        nonlocal pulled
        for _ in range(320):
            pulled += 1
            yield b" " * CHUNK

    _expect_413(_post(app, chunks(), {"content-type": "application/json"}))
    assert pulled <= MIB // CHUNK + 2, f"the master read {pulled} chunks of a body it refuses after 17"


def test_a_declared_length_over_the_limit_is_refused_before_any_of_the_body_is_read(app):
    pulled = 0

    async def chunks():
        nonlocal pulled
        for _ in range(32):
            pulled += 1
            yield b" " * CHUNK

    _expect_413(_post(app, chunks(), {"content-length": str(2 * MIB), "content-type": "application/json"}))
    assert pulled == 0

