"""Relaying a WebSocket (a Jupyter kernel's channels, a terminal) between the caller and a task's service.

The master accepts the caller's WebSocket only once the service has accepted its own leg, with the subprotocol
the service chose (a service that does not take it: accepted, then closed with 1011 and the reason); then frames
flow both ways as they come, text as text and binary as binary, until either side closes, and the other side is
closed with the same code. The service's leg carries the headers of `headers.request_headers` (the master's
credentials replaced by the service's token) and no `Origin`: the master has already checked the caller's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.typing import Subprotocol

log = logging.getLogger(__name__)

OPEN_TIMEOUT_S = 60.0
UNREACHABLE = 1011  # "the server met an unexpected condition": the service did not take the connection


async def relay(ws: WebSocket, url: str, upstream_headers: list[tuple[str, str]], task_id: str) -> None:
    """Join the caller's WebSocket `ws` to the service's at `url` (`ws://host:port/...`)."""
    kept = [(k, v) for k, v in upstream_headers if k.lower() not in ("host", "origin")]
    offered = [Subprotocol(p.strip()) for p in ws.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
    try:
        upstream = await connect(url, additional_headers=kept, subprotocols=offered or None,
                                 open_timeout=OPEN_TIMEOUT_S, max_size=None, compression=None, user_agent_header=None)
    except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as err:
        log.info("task %s: its service refused or did not answer a WebSocket: %s", task_id, err)
        await ws.accept()  # then closed with the reason: a refused handshake would read as a refusal of the caller
        await ws.close(code=UNREACHABLE, reason=f"task {task_id}'s service did not take the WebSocket")
        return
    async with upstream:
        await ws.accept(subprotocol=upstream.subprotocol)
        to_service = asyncio.create_task(_caller_to_service(ws, upstream))
        to_caller = asyncio.create_task(_service_to_caller(upstream, ws))
        done, pending = await asyncio.wait({to_service, to_caller}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed, WebSocketDisconnect, RuntimeError):
                await task
        code = upstream.close_code or 1000
        with contextlib.suppress(RuntimeError, ConnectionClosed):
            await ws.close(code=code if 1000 <= code < 5000 and code not in (1005, 1006, 1015) else 1000)
        await upstream.close()


async def _caller_to_service(ws: WebSocket, upstream: ClientConnection) -> None:
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return
        if message.get("text") is not None:
            await upstream.send(message["text"])
        elif message.get("bytes") is not None:
            await upstream.send(message["bytes"])


async def _service_to_caller(upstream: ClientConnection, ws: WebSocket) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for frame in upstream:
            if isinstance(frame, str):
                await ws.send_text(frame)
            else:
                await ws.send_bytes(frame)
