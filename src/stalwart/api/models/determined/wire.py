"""The base classes and field types of Determined's proto-JSON messages."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Rfc3339 = Annotated[str, Field(description="an RFC 3339 UTC time, e.g. 2026-11-27T16:30:00.123456Z")]
Int64 = Annotated[str, Field(pattern=r"^-?\d+$", description="a 64-bit integer, sent as a string (proto JSON)")]


class DetRequest(BaseModel):
    """A request body: Determined's client sends every field it knows, `null` for the ones it did not set, and
    may know fields this master does not (they are ignored, as grpc-gateway's decoder does)."""

    model_config = ConfigDict(extra="ignore")


class DetResponse(BaseModel):
    """An answer: every field emitted, as the real master's gateway does (EmitDefaults)."""

    model_config = ConfigDict(extra="forbid")


class DetErrorDetail(DetResponse):
    code: int = Field(description="the gRPC status code")
    reason: str = Field(description="the gRPC status name, e.g. NotFound")
    error: str = Field(description="what is wrong and how to fix it")


class DetErrorBody(DetResponse):
    """`{"error": {"code", "reason", "error"}}`: the real master's error body (det-wire.md §0)."""

    error: DetErrorDetail


class Empty(DetResponse):
    """`{}`: what pause, activate, kill and logout answer."""


class Pagination(DetResponse):
    offset: int
    limit: int
    startIndex: int
    endIndex: int
    total: int
