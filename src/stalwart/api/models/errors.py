"""The error body every non-2xx answer carries (`StalwartError.to_dict`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stalwart.api.models.common import Response

ErrorKind = Literal["internal", "invalid_request", "invalid_config", "invalid_context", "not_found",
                    "invalid_state", "unauthenticated", "forbidden", "unavailable", "master_unavailable"]


class ErrorDetail(Response):
    kind: ErrorKind
    message: str
    details: list[str] = Field(default_factory=list)


class ErrorBody(Response):
    """`{"error": {"kind", "message", "details"}}`; `kind` names the StalwartError subclass."""

    error: ErrorDetail
