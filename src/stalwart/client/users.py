"""Users, sessions, access tokens and the audit log.

`login` sends what Determined's CLI sends (`isHashed` with the salted SHA-512 of the password; an empty
password as ""), so the master treats both clients alike; on success the client carries the new session.
"""

from __future__ import annotations

import hashlib

from stalwart.api.models import common, users
from stalwart.client.endpoints import Api, body, endpoint

_SALT = "GubPEmmotfiK9TMD6Zdw"  # Determined's client-side salt (its authentication.salt_and_hash)

LOGIN = endpoint("POST", "/api/v1/auth/login", users.LoginAnswer, users.Login)
LOGOUT = endpoint("POST", "/api/v1/auth/logout", common.Empty)
ME = endpoint("GET", "/api/v1/me", users.UserEnvelope)
LIST = endpoint("GET", "/api/v1/users", users.UserList)
CREATE = endpoint("POST", "/api/v1/users", users.UserEnvelope, users.CreateUser)
GET = endpoint("GET", "/api/v1/users/{username}", users.UserEnvelope)
PATCH = endpoint("PATCH", "/api/v1/users/{username}", users.UserEnvelope, users.PatchUser)
PASSWORD = endpoint("POST", "/api/v1/users/{username}/password", common.Empty, users.SetPassword)
CREATE_TOKEN = endpoint("POST", "/api/v1/tokens", users.CreatedToken, users.CreateToken)
TOKENS = endpoint("GET", "/api/v1/tokens", users.TokenList)
REVOKE_TOKEN = endpoint("DELETE", "/api/v1/tokens/{token_id}", users.TokenEnvelope)
AUDIT = endpoint("GET", "/api/v1/audit", users.AuditList)
LINK_AGENT_USER = endpoint("POST", "/api/v1/users/{username}/agent-user", users.UserEnvelope, users.LinkAgentUser)
UNLINK_AGENT_USER = endpoint("DELETE", "/api/v1/users/{username}/agent-user", users.UserEnvelope)


def hashed(password: str) -> str:
    """What the client sends for a password: its salted SHA-512 ("" stays "")."""
    return "" if password == "" else hashlib.sha512((_SALT + password).encode()).hexdigest()


class UsersApi(Api):
    # -- sessions ------------------------------------------------------------------------------------
    def login(self, username: str, password: str) -> users.LoginAnswer:
        """Log in; from now on this client carries the new session."""
        answer = self.call(LOGIN, json_body=body(users.Login, username=username, password=hashed(password),
                                                 isHashed=True))
        self.set_session_token(answer.token)
        return answer

    def logout(self) -> None:
        self.call(LOGOUT)

    def me(self) -> users.User:
        return self.call(ME).user

    # -- users ---------------------------------------------------------------------------------------
    def list_users(self) -> list[users.User]:
        return self.call(LIST).users

    def create_user(self, username: str, *, password: str | None = None, admin: bool = False,
                    active: bool = True, display_name: str | None = None) -> users.User:
        fields: dict[str, object] = {"username": username, "admin": admin, "active": active}
        if password is not None:
            fields.update(password=hashed(password), isHashed=True)
        if display_name is not None:
            fields["displayName"] = display_name
        return self.call(CREATE, json_body=body(users.CreateUser, **fields)).user

    def get_user(self, username: str) -> users.User:
        return self.call(GET, path={"username": username}).user

    def edit_user(self, username: str, *, display_name: str | None = None, admin: bool | None = None,
                  active: bool | None = None) -> users.User:
        fields = {k: v for k, v in (("displayName", display_name), ("admin", admin), ("active", active))
                  if v is not None}
        return self.call(PATCH, path={"username": username}, json_body=body(users.PatchUser, **fields)).user

    def set_password(self, username: str, password: str, *, old_password: str | None = None) -> None:
        fields: dict[str, object] = {"password": hashed(password), "isHashed": True}
        if old_password is not None:
            fields["oldPassword"] = hashed(old_password)
        self.call(PASSWORD, path={"username": username}, json_body=body(users.SetPassword, **fields))

    def link_agent_user(self, username: str, *, uid: int, gid: int, user: str, group: str) -> users.User:
        """Run `username`'s tasks as this OS user and group on agents that run as root (admins only)."""
        fields = {"agentUid": uid, "agentGid": gid, "agentUser": user, "agentGroup": group}
        return self.call(LINK_AGENT_USER, path={"username": username},
                         json_body=body(users.LinkAgentUser, **fields)).user

    def unlink_agent_user(self, username: str) -> users.User:
        return self.call(UNLINK_AGENT_USER, path={"username": username}).user

    # -- access tokens -------------------------------------------------------------------------------
    def create_token(self, *, username: str | None = None, lifespan_s: int | None = None,
                     description: str | None = None) -> users.CreatedToken:
        fields = {k: v for k, v in (("username", username), ("lifespan", lifespan_s), ("description", description))
                  if v is not None}
        return self.call(CREATE_TOKEN, json_body=body(users.CreateToken, **fields))

    def list_tokens(self, *, all_users: bool = False) -> list[users.Token]:
        return self.call(TOKENS, params={"all": "true"} if all_users else None).tokens

    def revoke_token(self, token_id: int) -> users.Token:
        return self.call(REVOKE_TOKEN, path={"token_id": token_id}).tokenInfo

    # -- the audit log -------------------------------------------------------------------------------
    def audit_log(self, *, username: str | None = None, since: float | None = None,
                  limit: int = 100) -> list[users.AuditEntry]:
        return self.call(AUDIT, params={"user": username, "since": since, "limit": limit}).entries
