"""Reads and writes of users (and the OS user their tasks run as), their sessions and access tokens
(`user_sessions`), and the audit log."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_U = t.users.c
_S = t.user_sessions.c
_A = t.audit_log.c


# -- users ----------------------------------------------------------------------------------
def by_name(conn: Conn, username: str) -> Row | None:
    return conn.execute(sa.select(t.users).where(_U.username == username)).mappings().first()


def all_users(conn: Conn) -> list[Row]:
    return list(conn.execute(sa.select(t.users).order_by(_U.id)).mappings().all())


def insert_user(conn: Conn, *, username: str, display_name: str | None, password_hash: str | None, admin: bool,
                active: bool, created_at: float) -> int:
    key = conn.execute(t.users.insert().values(
        username=username, display_name=display_name, password_hash=password_hash, admin=admin, active=active,
        created_at=created_at, modified_at=created_at)).inserted_primary_key
    assert key is not None
    return int(key[0])


def update_user(conn: Conn, user_id: int, **values: Any) -> None:
    conn.execute(t.users.update().where(_U.id == user_id).values(**values))


def active_without_password(conn: Conn) -> list[str]:
    """Names of the active accounts whose password is empty (single-sign-on users have none to log in with)."""
    q = (sa.select(_U.username).where(_U.active.is_(True), _U.password_hash.is_(None), _U.remote.is_(False))
         .order_by(_U.id))
    return list(conn.execute(q).scalars())


# -- sessions and access tokens ---------------------------------------------------------------
def insert_session(conn: Conn, *, user_id: int, token_hash: str, kind: str, created_at: float,
                   expires_at: float | None, description: str | None = None, allocation_id: str | None = None) -> int:
    key = conn.execute(t.user_sessions.insert().values(
        user_id=user_id, token_hash=token_hash, kind=kind, created_at=created_at, expires_at=expires_at,
        description=description, allocation_id=allocation_id)).inserted_primary_key
    assert key is not None
    return int(key[0])


def live_session(conn: Conn, token_hash: str) -> Row | None:
    """The unrevoked session of `token_hash` with its user's name, admin and active flags (None if none)."""
    q = (sa.select(_S.id, _S.kind, _S.expires_at, _S.user_id, _U.username, _U.admin, _U.active)
         .join(t.users, _U.id == _S.user_id)
         .where(_S.token_hash == token_hash, _S.revoked_at.is_(None)))
    return conn.execute(q).mappings().first()


def session_by_hash(conn: Conn, token_hash: str) -> Row | None:
    """The session row of `token_hash`, revoked or not."""
    return conn.execute(sa.select(t.user_sessions).where(_S.token_hash == token_hash)).mappings().first()


def revoke_session(conn: Conn, session_id: int, at: float) -> None:
    conn.execute(t.user_sessions.update().where(_S.id == session_id, _S.revoked_at.is_(None)).values(revoked_at=at))


def revoke_sessions_of(conn: Conn, user_id: int, at: float) -> None:
    """End every session and token of one user."""
    conn.execute(t.user_sessions.update().where(_S.user_id == user_id, _S.revoked_at.is_(None))
                 .values(revoked_at=at))


def revoke_allocation_sessions(conn: Conn, allocation_id: str, at: float) -> int:
    """End the owner sessions handed to one allocation's tasks; how many there were."""
    res = conn.execute(t.user_sessions.update()
                       .where(_S.allocation_id == allocation_id, _S.revoked_at.is_(None)).values(revoked_at=at))
    return res.rowcount or 0


def tokens(conn: Conn, user_id: int | None = None) -> list[Row]:
    """Access tokens (of one user, or of everyone), newest last, with their users' names."""
    q = (sa.select(t.user_sessions, _U.username).join(t.users, _U.id == _S.user_id)
         .where(_S.kind == "access").order_by(_S.id))
    if user_id is not None:
        q = q.where(_S.user_id == user_id)
    return list(conn.execute(q).mappings().all())


def token(conn: Conn, token_id: int) -> Row | None:
    q = (sa.select(t.user_sessions, _U.username).join(t.users, _U.id == _S.user_id)
         .where(_S.id == token_id, _S.kind == "access"))
    return conn.execute(q).mappings().first()


# -- the audit log ------------------------------------------------------------------------------
def insert_audit(conn: Conn, *, timestamp: float, username: str | None, method: str, path: str, target: str | None,
                 status: int, outcome: str) -> None:
    conn.execute(t.audit_log.insert().values(timestamp=timestamp, username=username, method=method, path=path[:2048],
                                             target=target, status=status, outcome=outcome))


def audit_entries(conn: Conn, *, username: str | None = None, since: float | None = None,
                  limit: int = 100) -> list[Row]:
    """The newest `limit` entries (of one user, since a time), oldest first."""
    q = sa.select(t.audit_log)
    if username is not None:
        q = q.where(_A.username == username)
    if since is not None:
        q = q.where(_A.timestamp >= since)
    rows = list(conn.execute(q.order_by(_A.id.desc()).limit(limit)).mappings().all())
    return rows[::-1]


# -- the OS user a task runs as (issue 20) -----------------------------------------------------
def set_agent_user(conn: Conn, user_id: int, link: dict[str, Any] | None, at: float) -> None:
    """Link a user to an OS user (`{uid, gid, user, group}`), or unlink it (None)."""
    link = link or {}
    conn.execute(t.users.update().where(_U.id == user_id).values(
        agent_uid=link.get("uid"), agent_gid=link.get("gid"), agent_user=link.get("user"),
        agent_group=link.get("group"), modified_at=at))


def _link_of(row: Any) -> dict[str, Any] | None:
    if row is None or row.agent_uid is None or row.agent_gid is None:
        return None
    return {"uid": int(row.agent_uid), "gid": int(row.agent_gid), "user": row.agent_user or str(row.agent_uid),
            "group": row.agent_group or str(row.agent_gid)}


def agent_user_of(conn: Conn, owner: str, project_id: int | None) -> dict[str, Any] | None:
    """The OS user a task of `owner` in project `project_id` runs as: the owner's link, else the project's
    workspace's default, else None (the agent's own user)."""
    cols = (_U.agent_uid, _U.agent_gid, _U.agent_user, _U.agent_group)
    link = _link_of(conn.execute(sa.select(*cols).where(_U.username == owner)).first())
    if link is not None or project_id is None:
        return link
    w, p = t.workspaces.c, t.projects.c
    q = (sa.select(w.agent_uid, w.agent_gid, w.agent_user, w.agent_group)
         .join(t.projects, p.workspace_id == w.id).where(p.id == project_id))
    return _link_of(conn.execute(q).first())
