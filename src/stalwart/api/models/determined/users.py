"""Logging in and who is calling: Determined's LoginRequest/Response, User and GetMeResponse, and `/info`."""

from __future__ import annotations

from pydantic import Field

from stalwart.api.models.determined.wire import DetRequest, DetResponse, Rfc3339


class LoginRequest(DetRequest):
    """With `isHashed` the password is the client's salted SHA-512 of it ("" stays "")."""

    username: str = Field(min_length=1, max_length=128)
    password: str | None = Field(default="", max_length=4096)
    isHashed: bool | None = False


class AgentUserGroup(DetResponse):
    agentUid: int
    agentGid: int
    agentUser: str
    agentGroup: str


class User(DetResponse):
    id: int
    username: str
    displayName: str
    admin: bool
    active: bool
    remote: bool
    agentUserGroup: AgentUserGroup | None
    modifiedAt: Rfc3339 | None
    lastAuthAt: Rfc3339 | None


class LoginResponse(DetResponse):
    token: str
    user: User


class GetMeResponse(DetResponse):
    user: User


class MasterInfo(DetResponse):
    """`GET /info`: plain snake_case JSON (not proto JSON). `version` must be a PEP 440 version: the CLI parses it."""

    version: str
    master_id: str
    cluster_id: str
    cluster_name: str
    telemetry: dict[str, bool]
    sso_providers: list[dict[str, str]] | None
