"""Errors on the Determined listener, in the real master's shape: `{"error": {"code", "reason", "error"}}` with the
HTTP status of its gRPC code (det-wire.md §0), so Determined's client prints the message instead of failing in its
decoder. A path this listener does not serve gets a 404 that says so and what to use instead."""

from __future__ import annotations

import json

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from stalwart.api.errors import StalwartError, TooManyRequests
from stalwart.master.errors import UnexpectedErrors

GRPC_OF_STATUS: dict[int, tuple[int, str]] = {
    400: (3, "InvalidArgument"), 401: (16, "Unauthenticated"), 403: (7, "PermissionDenied"), 404: (5, "NotFound"),
    405: (12, "Unimplemented"), 409: (9, "FailedPrecondition"), 413: (8, "ResourceExhausted"),
    429: (8, "ResourceExhausted"), 500: (13, "Internal"), 502: (14, "Unavailable"), 503: (14, "Unavailable"),
}
NOT_SERVED = ("Stalwart does not serve {what} to Determined's CLI and SDK yet; use `stalwart` for it "
              "(docs/determined-cli.md lists what `det` can do against Stalwart)")


def body(status: int, message: str) -> dict[str, dict[str, object]]:
    code, reason = GRPC_OF_STATUS.get(status, (2, "Unknown"))
    return {"error": {"code": code, "reason": reason, "error": message}}


def answer(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body(status, message), status_code=status, headers=headers)


async def stalwart_error(_request: Request, err: StalwartError) -> JSONResponse:
    headers = {"Retry-After": str(err.retry_after_s)} if isinstance(err, TooManyRequests) else None
    return answer(err.http_status, err.full_message(), headers)


async def validation_error(_request: Request, err: RequestValidationError) -> JSONResponse:
    details = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()]
    return answer(400, "invalid request: " + "; ".join(details))


async def http_error(request: Request, err: HTTPException) -> JSONResponse:
    """Routing's 404 and 405 say what is not served; a body the framework could not read is a 400."""
    if isinstance(err.__cause__, StalwartError):  # a body over the limit, raised while FastAPI read it
        return await stalwart_error(request, err.__cause__)
    if err.status_code == 404:
        return answer(404, NOT_SERVED.format(what=f"{request.method} {request.url.path}"))
    if err.status_code == 405:
        return answer(405, NOT_SERVED.format(what=f"{request.method} on {request.url.path}"))
    return answer(err.status_code, str(err.detail), dict(err.headers) if err.headers else None)


def internal_error_body(err: BaseException) -> bytes:
    said = f": {err}" if str(err) else ""
    return json.dumps(body(500, f"internal master error: {type(err).__name__}{said}")).encode()


def install(app: FastAPI) -> None:
    """Answer every error of the Determined listener's app in Determined's shape."""
    app.add_exception_handler(StalwartError, stalwart_error)  # type: ignore[arg-type]  # Starlette's handler type
    app.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]  # as above
    app.add_exception_handler(HTTPException, http_error)  # type: ignore[arg-type]  # as above
    app.add_middleware(UnexpectedErrors, body_of=internal_error_body)
