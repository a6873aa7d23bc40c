"""Users, sessions, access tokens and the audit log: login (Determined's shapes), `me`, user admin, tokens."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from stalwart.api.models.common import Id, Request, Response, Timestamp

Username = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*$",
                                description="a user name: letters, digits, '_', '.', '@', '-'")]
Password = Annotated[str, Field(max_length=1024)]
DisplayName = Annotated[str, Field(max_length=256)]
Description = Annotated[str, Field(max_length=1024)]
Lifespan = Annotated[int, Field(ge=60, le=10 * 365 * 86400, description="seconds until the token expires")]
OsId = Annotated[int, Field(ge=0, le=2**31 - 1, description="a POSIX user or group id")]
OsName = Annotated[str, Field(min_length=1, max_length=32, pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*\$?$",
                              description="a POSIX user or group name: a letter or '_' first, then letters, digits, "
                                          "'_', '.', '-' (a trailing '$' allowed)")]


class AgentUserGroup(Response):
    """The OS user and group a user's tasks run as on agents that run as root (Determined's field names)."""

    agentUid: int
    agentGid: int
    agentUser: str
    agentGroup: str


class User(Response):
    id: int
    username: str
    displayName: str | None = None
    admin: bool
    active: bool
    remote: bool = False
    modifiedAt: Timestamp | None = None
    lastAuthAt: Timestamp | None = None
    hasPassword: bool = False
    agentUserGroup: AgentUserGroup | None = Field(
        default=None, description="the OS user its tasks run as (`stalwart user link-with-agent-user`); none: the "
                                  "workspace's, else the agent's own")


class UserEnvelope(Response):
    user: User


class UserList(Response):
    users: list[User]


class Login(Request):
    """Determined's login body: with `isHashed` the password is the CLI's salted SHA-512 of it ("" stays "")."""

    username: Username
    password: Password = ""
    isHashed: bool = False


class LoginAnswer(Response):
    token: str
    user: User


class CreateUser(Request):
    username: Username
    displayName: DisplayName | None = None
    admin: bool = False
    active: bool = True
    password: Password | None = None
    isHashed: bool = False


class PatchUser(Request):
    """Only the fields given change. `admin` and `active` need manage_users."""

    displayName: DisplayName | None = None
    admin: bool | None = None
    active: bool | None = None


class SetPassword(Request):
    password: Password
    isHashed: bool = False
    oldPassword: Password | None = Field(
        default=None, description="one's own current password (not needed by an admin setting another's)")


class LinkAgentUser(Request):
    """Run this user's tasks as one OS user and group (on agents that run as root)."""

    agentUid: OsId
    agentGid: OsId
    agentUser: OsName
    agentGroup: OsName


class Token(Response):
    id: int
    username: str
    description: str | None = None
    createdAt: Timestamp
    expiresAt: Timestamp | None = None
    revoked: bool = False
    lastUsedAt: Timestamp | None = None


class TokenEnvelope(Response):
    tokenInfo: Token


class CreateToken(Request):
    username: Username | None = Field(default=None, description="whose token (admins only; default: the caller)")
    lifespan: Lifespan | None = None
    description: Description | None = None


class CreatedToken(Response):
    """The only time the token's secret is shown."""

    token: str
    tokenInfo: Token


class TokenList(Response):
    tokens: list[Token]


class AuditEntry(Response):
    id: Id
    timestamp: Timestamp
    username: str | None = None
    method: str
    path: str
    target: str | None = None
    status: int
    outcome: str


class AuditList(Response):
    entries: list[AuditEntry]
