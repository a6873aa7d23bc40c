"""`/info`, logging in and out and `/api/v1/me` on the Determined listener."""

from __future__ import annotations

from fastapi import APIRouter, Request

from stalwart.api.determined_routes import DET_BY_KEY
from stalwart.api.models.determined.users import (
    AgentUserGroup,
    GetMeResponse,
    LoginRequest,
    LoginResponse,
    MasterInfo,
    User,
)
from stalwart.api.models.determined.wire import Empty
from stalwart.master.determined_api.wire import rfc3339
from stalwart.master.identity import accounts, audit, login_guard, sessions
from stalwart.master.queries.rows import Row
from stalwart.master.routes.common import identity, master
from stalwart.master.routes.contract import route
from stalwart.master.routes.users import agent_user_view

router = APIRouter()
DETERMINED_VERSION = "0.38.1"
"""What `/info` reports: the Determined release whose wire this listener speaks. The CLI compares it with its own
version and, being equal, says nothing; it must be a PEP 440 version or every command fails (det-wire.md §1.1)."""


def user_of(row: Row) -> User:
    """A user as Determined's message; its OS user as Stalwart's own user answer shows it."""
    link = agent_user_view(row)
    group = AgentUserGroup(**link.model_dump()) if link is not None else None
    return User(id=row["id"], username=row["username"], displayName=row["display_name"] or "",
                admin=bool(row["admin"]), active=bool(row["active"]), remote=bool(row["remote"]),
                agentUserGroup=group, modifiedAt=rfc3339(row["modified_at"]), lastAuthAt=rfc3339(row["last_auth_at"]))


@route(router, "GET", "/info", table=DET_BY_KEY)
async def info(request: Request) -> MasterInfo:
    m = master(request)
    return MasterInfo(version=DETERMINED_VERSION, master_id=m.cluster_id, cluster_id=m.cluster_id,
                      cluster_name="", telemetry={"enabled": False}, sso_providers=None)


@route(router, "POST", "/api/v1/auth/login", table=DET_BY_KEY)
async def login(request: Request, payload: LoginRequest) -> LoginResponse:
    """The master's own login (the same sessions, back-off and audit): Determined's client sends the salted hash."""
    audit.mark(request, payload.username, f"user {payload.username}")
    token, row = await accounts.login(master(request), payload.username, payload.password or "",
                                      bool(payload.isHashed), client=login_guard.client_address(request))
    return LoginResponse(token=token, user=user_of(row))


@route(router, "POST", "/api/v1/auth/logout", table=DET_BY_KEY)
async def logout(request: Request) -> Empty:
    ident = identity(request)
    if ident.kind == "login":
        sessions.end_session(master(request), ident.session_id)
    return Empty()


@route(router, "GET", "/api/v1/me", table=DET_BY_KEY)
async def me(request: Request) -> GetMeResponse:
    with master(request).db.begin() as conn:
        return GetMeResponse(user=user_of(accounts.get_user(conn, identity(request).username)))
