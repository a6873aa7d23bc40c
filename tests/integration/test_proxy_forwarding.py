"""The proxy's forwarding engine (master/proxy: headers, forward, websocket) between real servers on loopback.

A front app serves `/proxy/{task}/...` with the engine alone, in front of the recording service
(stalwart.testing.recording_service); both run in uvicorn. What the service receives, and what the caller gets
back, is checked byte by byte: no master credential crosses, bodies stream both ways, WebSockets relay text,
binary, subprotocols and close codes, and a service that does not answer is a clear 502 (a 1011 close).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from stalwart.api.errors import StalwartError
from stalwart.master.proxy import forward, websocket
from stalwart.master.proxy.upstream import Pool
from stalwart.testing import free_port
from stalwart.testing.recording_service import Received, ServedApp, recording_service

SERVICE_TOKEN = "svc-0123456789abcdef"
MASTER_COOKIES = "stalwart_session=SESSION-SECRET; _xsrf=jupyter-own; stalwart_csrf=CSRF-SECRET"


def front_app(service_url: str) -> Starlette:
    host, port = service_url.removeprefix("http://").rsplit(":", 1)
    pool = Pool()

    async def http(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await forward.forward(pool, scope, receive, send, (host, int(port)), SERVICE_TOKEN,
                                  scope["path"].split("/")[2])
        except StalwartError as err:
            await PlainTextResponse(str(err), status_code=err.http_status)(scope, receive, send)

    async def ws(socket: WebSocket) -> None:
        url = "ws" + service_url.removeprefix("http") + forward.upstream_target(socket)
        await websocket.relay(socket, url, forward.outgoing_headers(socket, SERVICE_TOKEN), socket.path_params["task"])

    return Starlette(routes=[WebSocketRoute("/proxy/{task}/{path:path}", ws), Mount("/proxy", app=http)])


@pytest.fixture
def served() -> Iterator[tuple[str, str, Received]]:
    """(the front's URL, the service's URL, what the service received)."""
    with recording_service() as (service, received), ServedApp(front_app(service.url)) as front:
        yield front.url, service.url, received


def test_no_master_credential_reaches_the_service_and_its_token_does(served) -> None:
    front, _, received = served
    answer = httpx.post(f"{front}/proxy/notebook-3/api/echo?a=1&b=%2F", content=b"payload",
                        headers={"Authorization": "Bearer USER-TOKEN", "Cookie": MASTER_COOKIES,
                                 "X-CSRF-Token": "CSRF-SECRET", "X-Custom": "kept"})
    assert answer.status_code == 200
    seen = received.requests[-1]
    assert seen["path"] == "/proxy/notebook-3/api/echo" and seen["query"] == "a=1&b=%2F"  # as sent
    assert seen["body"] == "payload" and seen["headers"]["x-custom"] == "kept"
    assert seen["headers"]["authorization"] == f"token {SERVICE_TOKEN}"
    assert seen["headers"]["cookie"] == "_xsrf=jupyter-own"
    assert "x-csrf-token" not in seen["headers"]
    assert "SECRET" not in str(seen) and "USER-TOKEN" not in str(seen)
    assert seen["headers"]["host"] == front.removeprefix("http://")  # the Host the caller used
    assert SERVICE_TOKEN not in answer.text.replace(f"token {SERVICE_TOKEN}", "")  # echoed back only as a header


def test_a_cookie_under_a_master_name_is_dropped_and_the_service_s_own_pass(served) -> None:
    front, _, _ = served
    answer = httpx.get(f"{front}/proxy/notebook-3/cookie?stalwart_session=planted&stalwart_csrf=x&_xsrf=own")
    set_cookies = answer.headers.get_list("set-cookie")
    assert len(set_cookies) == 1 and set_cookies[0].startswith("_xsrf=own"), set_cookies


def test_large_and_streamed_answers_arrive_whole(served) -> None:
    front, service, _ = served
    big = httpx.get(f"{front}/proxy/t-1/bytes/{10 * 2**20}")
    assert big.status_code == 200 and big.content == b"s" * (10 * 2**20)
    assert big.headers["content-length"] == str(10 * 2**20)
    with httpx.stream("GET", f"{front}/proxy/t-1/stream/2000") as streamed:
        assert sum(len(chunk) for chunk in streamed.iter_raw()) == 2000 * 1024
    head = httpx.head(f"{front}/proxy/t-1/bytes/77")
    assert head.status_code in (200, 405) and head.content == b""


def test_a_websocket_relays_text_binary_subprotocol_and_close(served) -> None:
    front, _, received = served

    with connect(f"ws{front.removeprefix('http')}/proxy/notebook-3/api/kernels/ws?session=1",
                 subprotocols=["v1.kernel.websocket.jupyter.org"],  # type: ignore[list-item]
                 additional_headers={"Cookie": MASTER_COOKIES, "Authorization": "Bearer USER"}) as ws:
        ws.send("hello")
        text = ws.recv()
        ws.send(b"\x00\x01\xff")
        raw = ws.recv()
        ws.send("close")
        with pytest.raises(ConnectionClosed):
            ws.recv()
        protocol, frames, code = ws.subprotocol, [text, raw], ws.close_code
    assert protocol == "v1.kernel.websocket.jupyter.org"
    assert frames == ["hello", b"\x00\x01\xff"] and code == 4001
    handshake = received.requests[-1]
    assert handshake["method"] == "WEBSOCKET" and handshake["query"] == "session=1"
    assert handshake["headers"]["authorization"] == f"token {SERVICE_TOKEN}"
    assert handshake["headers"]["cookie"] == "_xsrf=jupyter-own" and "origin" not in handshake["headers"]


def test_a_service_that_does_not_answer_is_a_clear_502_and_a_1011_close() -> None:
    with ServedApp(front_app(f"http://127.0.0.1:{free_port()}")) as front:
        answer = httpx.get(f"{front.url}/proxy/notebook-9/lab")
        assert answer.status_code == 502
        assert "task notebook-9's service" in answer.text and "does not answer" in answer.text

        with connect(f"ws://127.0.0.1:{front.port}/proxy/notebook-9/ws") as ws, \
                pytest.raises(ConnectionClosed) as closed:
            ws.recv()
        assert closed.value.rcvd is not None
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
            1011, "task notebook-9's service did not take the WebSocket")
