"""Reads and writes single sign-on needs: a user created by the provider's login, user groups by name, and setting
one user's group memberships to exactly a list."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn

_G = t.user_groups.c
_M = t.group_members.c


def insert_remote_user(conn: Conn, *, username: str, display_name: str | None, created_at: float) -> int:
    """A single-sign-on user: active, no password (password logins refuse it), `remote`."""
    key = conn.execute(t.users.insert().values(
        username=username, display_name=display_name, password_hash=None, admin=False, active=True, remote=True,
        created_at=created_at, modified_at=created_at)).inserted_primary_key
    assert key is not None
    return int(key[0])


def group_ids(conn: Conn, names: Iterable[str]) -> dict[str, int]:
    """The ids of the groups among `names` that exist, by name."""
    wanted = list(set(names))
    if not wanted:
        return {}
    rows = conn.execute(sa.select(_G.name, _G.id).where(_G.name.in_(wanted))).all()
    return {name: int(gid) for name, gid in rows}


def set_memberships(conn: Conn, user_id: int, group_ids_: Iterable[int]) -> None:
    """Make `user_id` a member of exactly `group_ids_`."""
    wanted = set(group_ids_)
    have = set(conn.execute(sa.select(_M.group_id).where(_M.user_id == user_id)).scalars())
    if have - wanted:
        conn.execute(t.group_members.delete().where(_M.user_id == user_id, _M.group_id.in_(have - wanted)))
    if wanted - have:
        conn.execute(t.group_members.insert(), [{"group_id": g, "user_id": user_id} for g in sorted(wanted - have)])


def user_by_id(conn: Conn, user_id: int) -> sa.RowMapping | None:
    return conn.execute(sa.select(t.users).where(t.users.c.id == user_id)).mappings().first()
