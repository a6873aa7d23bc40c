"""Relaying a WebSocket as a raw TCP stream: a shell's tunnel (`ssh`'s ProxyCommand, `stalwart shell tunnel`) to
its sshd, which speaks no HTTP.

The caller's binary frames are written to the TCP connection as they come, and what the service sends comes back
as binary frames; when either side closes, the other is closed too (the TCP side half-closed first, so sshd reads
the end of the stream, then fully). A service that does not accept the connection: the WebSocket is accepted, then
closed with 1011 and the reason, as `websocket.relay` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import urllib.parse

from starlette.websockets import WebSocket, WebSocketDisconnect

log = logging.getLogger(__name__)

OPEN_TIMEOUT_S = 10.0
UNREACHABLE = 1011
CHUNK = 65536


def address_of(base_url: str) -> tuple[str, int]:
    """(host, port) of a service's `http://host:port` (a bracketed IPv6 host unbracketed)."""
    parts = urllib.parse.urlsplit(base_url)
    return parts.hostname or "127.0.0.1", parts.port or 80


async def relay(ws: WebSocket, base_url: str, task_id: str) -> None:
    """Join the caller's WebSocket `ws` to a TCP connection to the service at `base_url` (`http://host:port`), both
    ways, until either ends."""
    host, port = address_of(base_url)
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), OPEN_TIMEOUT_S)
    except (OSError, TimeoutError) as err:
        log.info("task %s: its service did not take a TCP connection: %s", task_id, err)
        await ws.accept()
        await ws.close(code=UNREACHABLE, reason=f"task {task_id}'s service did not take the connection")
        return
    await ws.accept()
    up = asyncio.create_task(_caller_to_service(ws, writer))
    down = asyncio.create_task(_service_to_caller(reader, ws))
    try:
        await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (up, down):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError, OSError):
                await task
        writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await writer.wait_closed()
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await ws.close(code=1000)


async def _caller_to_service(ws: WebSocket, writer: asyncio.StreamWriter) -> None:
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            break
        data = message.get("bytes")
        if data is None and message.get("text") is not None:
            data = message["text"].encode()
        if data:
            writer.write(data)
            await writer.drain()
    if writer.can_write_eof():
        with contextlib.suppress(OSError):
            writer.write_eof()


async def _service_to_caller(reader: asyncio.StreamReader, ws: WebSocket) -> None:
    while True:
        data = await reader.read(CHUNK)
        if not data:
            return
        await ws.send_bytes(data)
