"""A task's service for tests and benchmarks: it records every request it receives and answers in known ways.

It stands where a notebook or a TensorBoard would, behind the master's proxy, so a test can check what crossed
the proxy (no master cookie, no `Authorization` of the caller's, the service token in its place) and a
benchmark can compare answers through the proxy with the same answers fetched straight from it. Routes, under
any prefix (a service behind the proxy is started with its base path, `/proxy/<task id>/`):

- `.../echo`: the request as JSON (method, path, query, headers, body);
- `.../bytes/N`: N bytes, with a Content-Length; `.../stream/N`: N chunks of 1 KiB, each sent on its own;
- `.../cookie`: sets the cookies named in the query (`?name=value`);
- `.../ws`: a WebSocket echo (text as text, binary as binary) that answers `close` by closing with code 4001.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from stalwart.testing.cluster import free_port

CHUNK = b"x" * 1024


@dataclass
class Received:
    """What the service was sent: one entry per HTTP request or WebSocket handshake."""

    requests: list[dict[str, Any]] = field(default_factory=list)


def service_app(received: Received) -> Starlette:
    async def echo(request: Request) -> Response:
        body = await request.body()
        entry = _entry(request.method, request.url.path, request.url.query, request.headers.items())
        entry["body"] = body.decode("utf-8", "replace")
        received.requests.append(entry)
        return JSONResponse(entry)

    async def sized(request: Request) -> Response:
        received.requests.append(_entry(request.method, request.url.path, "", request.headers.items()))
        size = int(request.path_params["n"])
        return Response(b"s" * size, media_type="application/octet-stream")

    async def streamed(request: Request) -> Response:
        received.requests.append(_entry(request.method, request.url.path, "", request.headers.items()))
        count = int(request.path_params["n"])

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(count):
                yield CHUNK
                await asyncio.sleep(0)

        return StreamingResponse(chunks(), media_type="application/octet-stream")

    async def cookie(request: Request) -> Response:
        received.requests.append(_entry(request.method, request.url.path, request.url.query, request.headers.items()))
        response = Response("set")
        for name, value in request.query_params.items():
            response.set_cookie(name, value, path="/")
        return response

    async def ws_echo(ws: WebSocket) -> None:
        received.requests.append(_entry("WEBSOCKET", ws.url.path, ws.url.query, ws.headers.items()))
        offered = [p.strip() for p in ws.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
        await ws.accept(subprotocol=offered[0] if offered else None)
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                message = await ws.receive()
                if message["type"] == "websocket.disconnect":
                    return
                if message.get("text") == "close":
                    await ws.close(code=4001)
                    return
                if message.get("text") is not None:
                    await ws.send_text(message["text"])
                elif message.get("bytes") is not None:
                    await ws.send_bytes(message["bytes"])

    def under(path: str) -> str:
        return "/{prefix:path}" + path

    return Starlette(routes=[
        Route(under("/echo"), echo, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        Route(under("/bytes/{n:int}"), sized), Route(under("/stream/{n:int}"), streamed),
        Route(under("/cookie"), cookie), WebSocketRoute(under("/ws"), ws_echo),
    ])


def _entry(method: str, path: str, query: str, headers: Any) -> dict[str, Any]:
    return {"method": method, "path": path, "query": query, "headers": {k.lower(): v for k, v in headers}}


class ServedApp:
    """An ASGI app served by uvicorn on a free loopback port, in a thread of this process."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
                                ws="websockets-sansio")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True, name=f"served-app-{self.port}")

    def __enter__(self) -> ServedApp:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the app on port {self.port} did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@contextlib.contextmanager
def recording_service() -> Iterator[tuple[ServedApp, Received]]:
    """The recording service, started; what it received."""
    received = Received()
    with ServedApp(service_app(received)) as served:
        yield served, received




def main(argv: list[str] | None = None) -> int:
    """`python -m stalwart.testing.recording_service PORT`: serve on all addresses of this machine (as a task's server
    does under `stalwart.harness.service`) until stopped; each request's record is also its answer (`.../echo`)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m stalwart.testing.recording_service PORT", file=sys.stderr)
        return 2
    uvicorn.run(service_app(Received()), host="0.0.0.0", port=int(args[0]), log_level="warning",
                ws="websockets-sansio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
