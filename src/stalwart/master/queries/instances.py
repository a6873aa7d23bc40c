"""Elastic pools' instances (migration 0013): the rows the provisioner keeps of each cloud instance it launched,
and the lookup of an instance's single-use join credential.

Columns: `provider_id` (the cloud's id, once the launch call answered), `state` (STARTING: its agent has not
registered; RUNNING; TERMINATING: the provisioner asked the cloud to end it; TERMINATED), `idle_since` (its agent
holds no work since then; None: busy or not registered), `join_token_hash` (the SHA-256 of its single-use join
credential, None once spent or void) and `join_expires_at`, `reason` (why it ends or ended)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_I = t.instances.c
STARTING, RUNNING, TERMINATING, TERMINATED = "STARTING", "RUNNING", "TERMINATING", "TERMINATED"


def insert(conn: Conn, values: dict[str, Any]) -> None:
    conn.execute(t.instances.insert().values(**values))


def update(conn: Conn, instance_id: str, values: dict[str, Any]) -> None:
    conn.execute(t.instances.update().where(_I.id == instance_id).values(**values))


def get(conn: Conn, instance_id: str) -> Row:
    return conn.execute(sa.select(t.instances).where(_I.id == instance_id)).mappings().one()


def live(conn: Conn, pool: str) -> list[Row]:
    """The pool's instances that have not ended, oldest first."""
    return list(conn.execute(sa.select(t.instances).where(_I.pool == pool, _I.state != TERMINATED)
                             .order_by(_I.launched_at, _I.id)).mappings())


def recent(conn: Conn, pool: str, ended_limit: int = 20) -> list[Row]:
    """The pool's live instances and its last `ended_limit` ended ones, newest first."""
    alive = sa.select(t.instances).where(_I.pool == pool, _I.state != TERMINATED)
    ended = (sa.select(t.instances).where(_I.pool == pool, _I.state == TERMINATED)
             .order_by(_I.ended_at.desc()).limit(ended_limit))
    rows = [*conn.execute(alive).mappings(), *conn.execute(ended).mappings()]
    return sorted(rows, key=lambda r: r["launched_at"], reverse=True)


def by_join_hash(conn: Conn, token_hash: str) -> Row | None:
    """The instance whose join credential has this hash, whatever its expiry (the caller checks it)."""
    return conn.execute(sa.select(t.instances).where(_I.join_token_hash == token_hash)).mappings().first()


def by_agent(conn: Conn, agent_id: str) -> Row | None:
    return conn.execute(sa.select(t.instances).where(_I.agent_id == agent_id)).mappings().first()


def close_join(conn: Conn, instance_id: str) -> None:
    """The instance's join credential is spent (its agent enrolled) or void (the instance ends)."""
    conn.execute(t.instances.update().where(_I.id == instance_id).values(join_token_hash=None, join_expires_at=None))
