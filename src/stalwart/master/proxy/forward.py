"""Forwarding one HTTP request to a task's service and streaming its answer back, as plain ASGI.

Both bodies stream: the request's is sent upstream as it arrives, the answer's is passed on chunk by chunk as
the service writes it (a 10 GB download or a server-sent event stream holds no more than a chunk in the
master), with the caller's connection setting the pace. The path and query go upstream as they came, undecoded:
each service is started with its base path set to `/proxy/<task id>/`, so its own links keep working behind the
master. The request goes out on a kept-alive connection of the master's `upstream.Pool`; the forwarder speaks
ASGI to the caller's side directly, without a framework's request and response objects (bench/RESULTS.md, B15).

A caller who goes away while the answer streams closes the service's connection too; a service that breaks off
mid-answer breaks off the caller's answer (it is never completed with what did not arrive).
"""

from __future__ import annotations

import asyncio
import logging

import h11
from starlette.requests import HTTPConnection
from starlette.types import Message, Receive, Scope, Send

from stalwart.api.errors import StalwartError
from stalwart.master.proxy import headers
from stalwart.master.proxy.upstream import Pool, Upstream

log = logging.getLogger(__name__)

_NO_BODY = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
"""Methods whose requests carry a body only when they say so (Content-Length or Transfer-Encoding)."""


class ServiceUnreachable(StalwartError):
    """The task's service did not answer (it has not started, it stopped, or its agent cannot be reached)."""

    http_status = 502


def upstream_target(request: HTTPConnection) -> str:
    """The request's (or WebSocket's) path and query as they came (percent-encoding untouched)."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string") or b""
    return (raw + (b"?" + query if query else b"")).decode("latin-1")


def outgoing_headers(request: HTTPConnection, service_token: str | None) -> list[tuple[str, str]]:
    """The headers the service gets for `request` (a WebSocket's handshake too): `headers.request_headers`."""
    client = request.client
    scheme = {"ws": "http", "wss": "https"}.get(request.url.scheme, request.url.scheme)
    return headers.request_headers(request.headers.items(), service_token, client.host if client else None,
                                   scheme, request.headers.get("host", ""))


async def forward(pool: Pool, scope: Scope, receive: Receive, send: Send, service: tuple[str, int],
                  service_token: str | None, task_id: str) -> None:
    """Send the request of `scope`/`receive` to the service at `service` (host, port) and stream its answer to
    `send`. ServiceUnreachable (nothing sent yet) when the service does not answer."""
    request = HTTPConnection(scope)
    head, has_body = _request_head(request, service, service_token)
    conn, answer = await _exchange(pool, service, head, receive if has_body else None, task_id)
    complete = False
    try:
        await send({"type": "http.response.start", "status": answer.status_code,
                    "headers": _answer_headers(list(answer.headers))})
        complete = await _stream_answer(conn, receive, send, task_id)
    finally:
        if complete:
            pool.release(conn)
        else:
            conn.abort()


def _request_head(request: HTTPConnection, service: tuple[str, int],
                  service_token: str | None) -> tuple[h11.Request, bool]:
    """The request line and headers the service gets, and whether a body follows."""
    out = outgoing_headers(request, service_token)
    method = request.scope["method"]
    length = request.headers.get("content-length")
    has_body = length is not None or "transfer-encoding" in request.headers or method not in _NO_BODY
    if length is not None:
        out.append(("content-length", length))
    elif has_body:
        out.append(("transfer-encoding", "chunked"))
    if "host" not in request.headers:  # an HTTP/1.0 caller's request: HTTP/1.1 needs one
        out.append(("host", f"{service[0]}:{service[1]}"))
    return h11.Request(method=method, target=upstream_target(request), headers=out), has_body


async def _exchange(pool: Pool, service: tuple[str, int], head: h11.Request, receive: Receive | None,
                    task_id: str) -> tuple[Upstream, h11.Response]:
    """Send the request (its body from `receive`, if any) and read the answer's head. A kept-alive connection
    that the service had closed meanwhile is retried once on a new one when no body was read yet."""
    fresh = receive is not None  # a body is read once: it goes out on a connection known to be open
    while True:
        try:
            conn = await pool.connect(*service, fresh=fresh)
        except (TimeoutError, OSError) as err:
            raise _unreachable(task_id, service, err) from None
        try:
            await conn.write(head)
            if receive is not None:
                await _send_body(conn, receive)
            await conn.write(h11.EndOfMessage())
            event = await conn.next_event()
            while isinstance(event, h11.InformationalResponse):  # 100 Continue and the like: the caller's leg is
                event = await conn.next_event()                    # uvicorn's own
        except (OSError, h11.ProtocolError) as err:
            conn.abort()
            if conn.reused and not fresh:
                fresh = True
                continue
            raise _unreachable(task_id, service, err) from None
        except BaseException:
            conn.abort()
            raise
        assert isinstance(event, h11.Response), event
        return conn, event


async def _send_body(conn: Upstream, receive: Receive) -> None:
    """Pass the caller's body on as it arrives (a caller who goes away mid-upload ends the exchange)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionAbortedError("the caller went away during the upload")
        chunk = message.get("body", b"")
        if chunk:
            await conn.write(h11.Data(data=chunk))
        if not message.get("more_body", False):
            return


async def _stream_answer(conn: Upstream, receive: Receive, send: Send, task_id: str) -> bool:
    """Pass the answer's body on as it arrives; True once all of it has (False when either side broke off)."""
    watcher: asyncio.Future[None] | None = None

    def watch() -> None:  # the answer is still coming: watch for the caller leaving meanwhile
        nonlocal watcher
        if watcher is None:
            watcher = asyncio.ensure_future(_abort_when_gone(receive, conn))

    try:
        while True:
            event = await conn.next_event(on_wait=watch)
            if type(event) is h11.Data:
                await send({"type": "http.response.body", "body": bytes(event.data), "more_body": True})
            elif type(event) is h11.EndOfMessage:
                break
    except (OSError, h11.ProtocolError) as err:
        log.info("task %s: its service's answer broke off: %s", task_id, err or type(err).__name__)
        return False
    finally:
        if watcher is not None:
            watcher.cancel()
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    return True


async def _abort_when_gone(receive: Receive, conn: Upstream) -> None:
    """Drop the service's connection once the caller's is gone, so that the answer stops being read."""
    message: Message = await receive()
    while message["type"] != "http.disconnect":
        message = await receive()
    conn.abort()


def _answer_headers(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The service's answer headers the caller gets (`headers.answer_headers`), its Content-Length kept: the body
    passes as the service encoded it."""
    decoded = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw]
    out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.answer_headers(decoded)]
    out += [(k, v) for k, v in raw if k == b"content-length"]
    return out


def _unreachable(task_id: str, service: tuple[str, int], err: BaseException) -> ServiceUnreachable:
    log.info("task %s: its service at %s:%s does not answer: %r", task_id, *service, err)
    number = task_id.rpartition("-")[2]
    return ServiceUnreachable(f"task {task_id}'s service at {service[0]}:{service[1]} does not answer "
                              f"({type(err).__name__}); it may have stopped: see `stalwart cmd logs {number}`")
