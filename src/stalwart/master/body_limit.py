"""Refuse request bodies over the master's limit (413) while they arrive, never holding more than a chunk of one."""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stalwart.api.errors import InvalidRequest, StalwartError
from stalwart.context.pack import format_size

SETTING = "limits.max_request_body in the master config"


class RequestTooLarge(InvalidRequest):
    """The request body is over the master's limit. Its kind stays `invalid_request`, so clients read it as one."""

    http_status = 413


def too_large(max_bytes: int) -> RequestTooLarge:
    """The 413 error for a body over `max_bytes`, naming the setting that raises the limit."""
    return RequestTooLarge(f"request body is over the master's {format_size(max_bytes)} limit ({SETTING}: raise it "
                           "there if requests this large are expected)")


class BodyLimit:
    """Pure ASGI middleware: a body whose Content-Length is over `max_bytes` is refused before any of it is read;
    one without (chunked) is counted as the app reads it, and refused as soon as the count passes the limit.

    The refusal is a 413 with the usual JSON error body. uvicorn reads and discards the rest of the upload on a
    kept-alive connection, so the client gets the answer instead of a reset connection.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await bounded(self.app, scope, receive, send, self.max_bytes, lambda: too_large(self.max_bytes))


async def bounded(app: ASGIApp, scope: Scope, receive: Receive, send: Send, max_bytes: int,
                  error: Callable[[], RequestTooLarge]) -> None:
    """Run `app` on one HTTP request whose body may hold at most `max_bytes`: over a declared Content-Length it is
    refused before any byte is read; otherwise counted as the app reads it and refused (`error()`) once over."""
    declared = _content_length(scope)
    if declared is not None and declared > max_bytes:
        await answer_error(send, error())
        return
    seen = 0
    started = False

    async def counted_receive() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > max_bytes:
                raise error()
        return message

    async def watched_send(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = True
        await send(message)

    try:
        await app(scope, counted_receive, watched_send)
    except RequestTooLarge as err:  # the app's own error handler answers it first; this is the fallback
        if started:
            raise
        await answer_error(send, err)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed length itself
    return None


async def answer_error(send: Send, err: StalwartError) -> None:
    """Answer `err` (its status and ErrorBody) at once, whatever the request's body holds: none of it is read."""
    payload = json.dumps(err.to_dict()).encode()
    await send({"type": "http.response.start", "status": err.http_status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})
