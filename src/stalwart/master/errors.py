"""How the master answers errors: every error of a route is an ErrorBody, and an unexpected one keeps the connection.

`install(app)` registers the handlers and the middleware, in one place:
- a `StalwartError` answers its own status and body (a 429 with a Retry-After header);
- a request that fails validation (path, query, body) answers 400 naming each bad field, never FastAPI's 422;
- an HTTP error raised by the framework on a route (a body that cannot be parsed) answers an ErrorBody too,
  and the StalwartError that caused it (a body over the limit while FastAPI read it) answers as itself;
  routing's own answers (404 for an unknown path, 405 for a method a path lacks) keep FastAPI's body;
- `UnexpectedErrors` answers any other exception with a 500 ErrorBody.

Left to Starlette's own `ServerErrorMiddleware`, an unexpected exception is answered and then re-raised;
the server takes the re-raise as a broken application and drops the client's keep-alive connection, so the
next request on it fails like an unreachable master. `UnexpectedErrors` sits inside it, answers the 500
(logged with its traceback) and returns normally, so the connection stays usable. Errors the app means
(`StalwartError`, request validation) never reach it: their exception handlers answer them first.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stalwart.api.errors import (
    AuthError,
    ForbiddenError,
    InvalidRequest,
    InvalidStateError,
    StalwartError,
    TooManyRequests,
)

log = logging.getLogger(__name__)

ROUTING_ANSWERS = (404, 405)
"""Statuses the router itself answers (no route for the path, or none for the method): FastAPI's body stays."""
ERROR_OF_STATUS: dict[int, type[StalwartError]] = {
    400: InvalidRequest, 401: AuthError, 403: ForbiddenError, 409: InvalidStateError,
}


def install(app: FastAPI) -> None:
    """Answer every error of `app` as the module docstring says. Call it after the app's other middleware."""
    # Starlette types a handler as taking any Exception; each of ours takes the class it is registered for
    app.add_exception_handler(StalwartError, stalwart_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]  # as above
    app.add_exception_handler(HTTPException, http_error)  # type: ignore[arg-type]  # as above
    app.add_middleware(UnexpectedErrors)  # the outermost of the app's own: it sees what every other one raised


async def stalwart_error(_request: Request, err: StalwartError) -> JSONResponse:
    """Its own status and body; a 429 (TooManyRequests) also says when to ask again (Retry-After, seconds)."""
    headers = {"Retry-After": str(err.retry_after_s)} if isinstance(err, TooManyRequests) else None
    return JSONResponse(err.to_dict(), status_code=err.http_status, headers=headers)


async def validation_error(_request: Request, err: RequestValidationError) -> JSONResponse:
    details = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()]
    shown = "; ".join(details[:3]) + (f" (and {len(details) - 3} more)" if len(details) > 3 else "")
    bad = InvalidRequest(f"invalid request: {shown}", details=details)
    return JSONResponse(bad.to_dict(), status_code=bad.http_status)


async def http_error(request: Request, err: HTTPException) -> Response:
    """An HTTPException the framework raised: routing's 404/405 as FastAPI answers them, others as an ErrorBody."""
    if isinstance(err.__cause__, StalwartError):  # raised while FastAPI read the body (413 from BodyLimit)
        return await stalwart_error(request, err.__cause__)
    if err.status_code in ROUTING_ANSWERS:
        return await http_exception_handler(request, err)
    cls = ERROR_OF_STATUS.get(err.status_code, StalwartError)
    prefix = "invalid request: " if cls is InvalidRequest else ""
    body = cls(f"{prefix}{err.detail}").to_dict()
    return JSONResponse(body, status_code=err.status_code, headers=err.headers)


def internal_error_body(err: BaseException) -> bytes:
    """The ErrorBody of an unexpected error: kind `internal`, the exception's type and message."""
    said = f": {err}" if str(err) else ""
    message = f"internal master error: {type(err).__name__}{said}"
    return json.dumps(StalwartError(message).to_dict()).encode()


class UnexpectedErrors:
    """Pure ASGI middleware: answer an exception escaping the app with a 500 ErrorBody instead of re-raising it.

    An exception after the answer started (a stream failing midway) cannot change the status any more: it is
    logged and the answer is left incomplete, which makes the server close that one connection."""

    def __init__(self, app: ASGIApp, body_of: Callable[[BaseException], bytes] = internal_error_body) -> None:
        self.app = app
        self.body_of = body_of  # the 500's body (Determined's listener answers its own shape)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except Exception as err:  # noqa: BLE001 - every unexpected error is answered here, once
            where = f"{scope.get('method', '?')} {scope.get('path', '?')}"
            if started:
                log.exception("internal error in %s after its answer started; the answer is cut short", where)
                return
            log.exception("internal error in %s", where)
            body = self.body_of(err)
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
