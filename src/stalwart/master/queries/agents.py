"""Reads and writes of the agents table: registration, heartbeats, enable/disable, liveness."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row, one_or_404


def get(conn: Conn, agent_id: str) -> Row:
    """One agent; 404 when there is none."""
    return one_or_404(conn, t.agents, agent_id, "agent")


def find(conn: Conn, agent_id: str) -> Row | None:
    """One agent, or None when it never registered."""
    return conn.execute(sa.select(t.agents).where(t.agents.c.id == agent_id)).mappings().first()


def in_id_order(conn: Conn) -> list[Row]:
    """Every agent, by id."""
    return list(conn.execute(sa.select(t.agents).order_by(t.agents.c.id)).mappings().all())


def insert(conn: Conn, agent_id: str, values: Mapping[str, Any]) -> None:
    """Add a newly registered agent with the column `values` given."""
    conn.execute(t.agents.insert().values(id=agent_id, **values))


def update(conn: Conn, agent_id: str, values: Mapping[str, Any]) -> int:
    """Set the column `values` of one agent; how many rows changed (0: no such agent)."""
    return int(conn.execute(t.agents.update().where(t.agents.c.id == agent_id).values(**values)).rowcount)


def silent_since(conn: Conn, cutoff: float) -> list[str]:
    """Connected agents last heard from before `cutoff`."""
    return list(conn.execute(
        sa.select(t.agents.c.id).where(t.agents.c.connected.is_(True), t.agents.c.last_seen < cutoff)
    ).scalars().all())


def hosts(conn: Conn, agent_ids: Iterable[str]) -> dict[str, str | None]:
    """Agent id -> the address the master saw it at, else its hostname (None when it has neither)."""
    return {r.id: r.address or r.hostname for r in conn.execute(
        sa.select(t.agents.c.id, t.agents.c.hostname, t.agents.c.address).where(t.agents.c.id.in_(list(agent_ids))))}


def every(conn: Conn) -> list[Row]:
    """Every agent, in the database's order."""
    return list(conn.execute(sa.select(t.agents)).mappings().all())


def size_counts(conn: Conn, pool: str) -> dict[int, int]:
    """Agent size (slots) -> how many agents of the pool have it."""
    rows = conn.execute(sa.select(t.agents.c.slots, sa.func.count()).where(t.agents.c.resource_pool == pool)
                        .group_by(t.agents.c.slots)).all()
    return {int(slots): int(n) for slots, n in rows}
