"""/api/v1/auth, /me, /users, /tokens and /audit: logging in and out, user admin, access tokens, the audit log."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from stalwart.api import permissions as P
from stalwart.api.errors import AuthError, InvalidRequest, NotFoundError
from stalwart.api.models.common import MAX_ID, Empty, Timestamp
from stalwart.api.models.users import (
    AgentUserGroup,
    AuditEntry,
    AuditList,
    CreatedToken,
    CreateToken,
    CreateUser,
    LinkAgentUser,
    Login,
    LoginAnswer,
    PatchUser,
    SetPassword,
    Token,
    TokenEnvelope,
    TokenList,
    User,
    UserEnvelope,
    UserList,
    Username,
)
from stalwart.master.allocations import root_guard
from stalwart.master.identity import accounts, audit, authz, login_guard, sessions
from stalwart.master.queries import users as q
from stalwart.master.queries.rows import Row
from stalwart.master.routes.common import identity, master
from stalwart.master.routes.contract import route

router = APIRouter(prefix="/api/v1", tags=["users"])

UserPath = Annotated[str, Path(min_length=1, max_length=128, description="a user name")]
TokenPath = Annotated[int, Path(ge=0, le=MAX_ID, description="an access token's id (`stalwart token list`)")]
ForUser = Annotated[Username | None, Query(description="only this user's entries (default: everyone's)")]
Since = Annotated[Timestamp | None, Query(description="only entries at or after this time (seconds since epoch)")]
AuditLimit = Annotated[int, Query(ge=1, le=10_000, description="the most entries to return (the newest)")]
AllTokens = Annotated[bool, Query(alias="all", description="every user's tokens (admins only)")]



def user_view(row: Row) -> User:
    return User(id=row["id"], username=row["username"], displayName=row["display_name"], admin=bool(row["admin"]),
                active=bool(row["active"]), remote=bool(row["remote"]), modifiedAt=row["modified_at"],
                lastAuthAt=row["last_auth_at"], hasPassword=row["password_hash"] is not None,
                agentUserGroup=agent_user_view(row))


def agent_user_view(row: Row) -> AgentUserGroup | None:
    """The OS user a user's tasks run as (Determined's agentUserGroup), or None when it has no link."""
    if row["agent_uid"] is None or row["agent_gid"] is None:
        return None
    return AgentUserGroup(agentUid=row["agent_uid"], agentGid=row["agent_gid"],
                          agentUser=row["agent_user"] or str(row["agent_uid"]),
                          agentGroup=row["agent_group"] or str(row["agent_gid"]))


def token_view(row: Row) -> Token:
    return Token(id=row["id"], username=row["username"], description=row["description"], createdAt=row["created_at"],
                 expiresAt=row["expires_at"], revoked=row["revoked_at"] is not None)


# -- logging in and out -----------------------------------------------------------------------
@route(router, "POST", "/auth/login")
async def login(request: Request, payload: Login) -> LoginAnswer:
    """A new session: `{token, user}` (Determined's shape). Bad credentials: 401; an inactive user: 403; in
    back-off after failed logins for the name or from the address: 429 with Retry-After (docs/users.md)."""
    audit.mark(request, payload.username, f"user {payload.username}")
    token, user = await accounts.login(master(request), payload.username, payload.password, payload.isHashed,
                                       client=login_guard.client_address(request))
    return LoginAnswer(token=token, user=user_view(user))


@route(router, "POST", "/auth/logout")
async def logout(request: Request) -> Empty:
    """End the session this call came with (an access token is revoked with `DELETE /tokens/{id}` instead)."""
    ident = identity(request)
    if ident.kind == "login":
        sessions.end_session(master(request), ident.session_id)
    return Empty()


@route(router, "GET", "/me")
async def me(request: Request) -> UserEnvelope:
    with master(request).db.begin() as conn:
        return UserEnvelope(user=user_view(accounts.get_user(conn, identity(request).username)))


# -- users ----------------------------------------------------------------------------------
@route(router, "GET", "/users")
async def list_users(request: Request) -> UserList:
    with master(request).db.begin() as conn:
        return UserList(users=[user_view(u) for u in q.all_users(conn)])


@route(router, "POST", "/users")
async def create_user(request: Request, payload: CreateUser) -> UserEnvelope:
    audit.mark(request, identity(request).username, f"user {payload.username}")
    user = await accounts.create_user(master(request), username=payload.username, display_name=payload.displayName,
                                      admin=payload.admin, active=payload.active, password=payload.password,
                                      is_hashed=payload.isHashed)
    return UserEnvelope(user=user_view(user))


@route(router, "GET", "/users/{username}")
async def get_user(request: Request, username: UserPath) -> UserEnvelope:
    with master(request).db.begin() as conn:
        return UserEnvelope(user=user_view(accounts.get_user(conn, username)))


@route(router, "PATCH", "/users/{username}")
async def patch_user(request: Request, username: UserPath, payload: PatchUser) -> UserEnvelope:
    """Change a display name (one's own; admins anyone's); admin and active flags (admins only)."""
    changes: dict[str, Any] = {}
    if payload.displayName is not None:
        changes["display_name"] = payload.displayName
    for key in ("admin", "active"):
        value = getattr(payload, key)
        if value is not None:
            authz.require(master(request), identity(request), P.MANAGE_USERS)
            changes[key] = value
    return UserEnvelope(user=user_view(accounts.edit_user(master(request), username, changes)))


@route(router, "POST", "/users/{username}/password")
async def set_password(request: Request, username: UserPath, payload: SetPassword) -> Empty:
    """Set a password. One's own needs the current one (`oldPassword`, hashed as `password` is) unless it is
    empty; an admin setting another user's does not."""
    m, ident = master(request), identity(request)
    old = payload.oldPassword or ""
    if username == ident.username and not await accounts.check_password(m, username, old, payload.isHashed):
        raise AuthError("the current password (oldPassword) is wrong")
    await accounts.set_password(m, username, payload.password, payload.isHashed)
    return Empty()


# -- access tokens --------------------------------------------------------------------------------
@route(router, "POST", "/tokens")
async def create_token(request: Request, payload: CreateToken) -> CreatedToken:
    """A long-lived access token for automation; its secret is in this answer only."""
    m, ident = master(request), identity(request)
    username = payload.username or ident.username
    audit.mark(request, ident.username, f"user {username}")
    if username != ident.username:
        authz.require(m, ident, P.MANAGE_ALL_TOKENS)
    else:
        authz.require(m, ident, P.MANAGE_OWN_TOKENS, authz.Target(f"user {username}", username))
    lifespan = float(payload.lifespan) if payload.lifespan else sessions.TOKEN_LIFESPAN_S
    with m.db.begin() as conn:
        user = accounts.get_user(conn, username)
        if not user["active"]:
            raise InvalidRequest(f"user {username} is not active: activate it before giving it a token")
        token, token_id = sessions.open_session(conn, user["id"], "access", lifespan=lifespan,
                                                description=payload.description)
        row = q.token(conn, token_id)
    assert row is not None
    return CreatedToken(token=token, tokenInfo=token_view(row))


@route(router, "GET", "/tokens")
async def list_tokens(request: Request, show_all: AllTokens = False) -> TokenList:
    m, ident = master(request), identity(request)
    if show_all:
        authz.require(m, ident, P.MANAGE_ALL_TOKENS)
    with m.db.begin() as conn:
        rows = q.tokens(conn, None if show_all else ident.user_id)
    return TokenList(tokens=[token_view(r) for r in rows])


@route(router, "DELETE", "/tokens/{token_id}")
async def revoke_token(request: Request, token_id: TokenPath) -> TokenEnvelope:
    """Revoke an access token: it is refused from the next call on."""
    m = master(request)
    with m.db.begin() as conn:
        if q.token(conn, token_id) is None:
            raise NotFoundError(f"token {token_id} not found (see `stalwart token list`)")
        q.revoke_session(conn, token_id, time.time())
        row = q.token(conn, token_id)
    sessions.forget_all(m)
    assert row is not None
    return TokenEnvelope(tokenInfo=token_view(row))


# -- the audit log ------------------------------------------------------------------------------
@route(router, "GET", "/audit")
async def audit_log(request: Request, user: ForUser = None, since: Since = None, limit: AuditLimit = 100) -> AuditList:
    with master(request).db.begin() as conn:
        rows = q.audit_entries(conn, username=user, since=since, limit=limit)
    return AuditList(entries=[AuditEntry.model_validate(dict(r)) for r in rows])


# -- the OS user a user's tasks run as ----------------------------------------------------------
@route(router, "POST", "/users/{username}/agent-user")
async def link_agent_user(request: Request, username: UserPath, payload: LinkAgentUser) -> UserEnvelope:
    """Run USERNAME's tasks as this OS user and group on agents that run as root (set_agent_user: admins). Not
    root (uid or gid 0) unless the master config allows root tasks."""
    root_guard.check_link(master(request), payload.agentUid, payload.agentGid, "agentUid/agentGid")
    link = {"uid": payload.agentUid, "gid": payload.agentGid, "user": payload.agentUser, "group": payload.agentGroup}
    return UserEnvelope(user=_set_agent_user(request, username, link))


@route(router, "DELETE", "/users/{username}/agent-user")
async def unlink_agent_user(request: Request, username: UserPath) -> UserEnvelope:
    """Forget USERNAME's OS user: its tasks run as its workspace's default, else as the agent's user."""
    return UserEnvelope(user=_set_agent_user(request, username, None))


def _set_agent_user(request: Request, username: str, link: dict[str, Any] | None) -> User:
    m = master(request)
    audit.mark(request, identity(request).username, f"user {username}")
    with m.db.begin() as conn:
        user = accounts.get_user(conn, username)
        q.set_agent_user(conn, user["id"], link, time.time())
        return user_view(accounts.get_user(conn, username))
