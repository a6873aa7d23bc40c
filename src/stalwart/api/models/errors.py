"""The error body every non-2xx answer carries (`StalwartError.to_dict`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stalwart.api.models.common import Response

ErrorKind = Literal["internal", "invalid_request", "invalid_config", "invalid_context", "not_found",
                    "invalid_state", "unauthenticated", "forbidden", "too_many_requests", "unavailable",
                    "master_unavailable"]


class ErrorDetail(Response):
    kind: ErrorKind
    message: str
    details: list[str] = Field(default_factory=list)


class ErrorBody(Response):
    """`{"error": {"kind", "message", "details"}}`; `kind` names the StalwartError subclass."""

    error: ErrorDetail


class RouteNotFound(Response):
    """FastAPI's own 404 body, `{"detail": "Not Found"}`: the answer for a path no route matches. A route whose
    path takes a string can meet it too: a value holding an encoded `/` makes the path match no route."""

    detail: str
