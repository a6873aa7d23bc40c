"""Reads and writes of the agent_credentials table (each agent's own credential: its SHA-256, use, revocation),
and which allocations an agent's credential reaches."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_C = t.agent_credentials.c


def of_agent(conn: Conn, agent_id: str) -> Row | None:
    """The credential row of one agent, or None when it never had one (enrolled before credentials existed)."""
    return conn.execute(sa.select(t.agent_credentials).where(_C.agent_id == agent_id)).mappings().first()


def by_hash(conn: Conn, token_hash: str) -> Row | None:
    """The credential row whose SHA-256 is `token_hash`, or None."""
    return conn.execute(sa.select(t.agent_credentials).where(_C.token_hash == token_hash)).mappings().first()


def issue(conn: Conn, agent_id: str, token_hash: str, *, at: float, issued_to: str | None) -> None:
    """Give `agent_id` the credential whose SHA-256 is `token_hash`, replacing any it had."""
    conn.execute(t.agent_credentials.delete().where(_C.agent_id == agent_id))
    conn.execute(t.agent_credentials.insert().values(
        agent_id=agent_id, token_hash=token_hash, created_at=at, last_used=None, revoked_at=None, reenroll=False,
        issued_to=issued_to))


def mark_used(conn: Conn, agent_id: str, at: float) -> None:
    """Record that the agent's credential was presented at `at`."""
    conn.execute(t.agent_credentials.update().where(_C.agent_id == agent_id).values(last_used=at))


def revoke(conn: Conn, agent_id: str, *, at: float, reenroll: bool) -> int:
    """Revoke the agent's credential (`reenroll`: its id may enroll again with the cluster token); how many rows
    changed (0: it has none). A credential revoked earlier keeps its first revocation time."""
    return int(conn.execute(t.agent_credentials.update().where(_C.agent_id == agent_id).values(
        revoked_at=sa.func.coalesce(_C.revoked_at, at), reenroll=reenroll)).rowcount)


def with_agents(conn: Conn, agent_id: str | None = None) -> list[Row]:
    """Every agent and every credential (or only `agent_id`'s), by agent id: agent_id, created_at, last_used,
    revoked_at, reenroll (the credential's columns are None for an agent that has none yet), and `registered` (the
    agent row exists)."""
    agent_ids, credential_ids = sa.select(t.agents.c.id.label("agent_id")), sa.select(_C.agent_id.label("agent_id"))
    if agent_id is not None:
        agent_ids, credential_ids = agent_ids.where(t.agents.c.id == agent_id), credential_ids.where(
            _C.agent_id == agent_id)
    ids = sa.union(agent_ids, credential_ids).subquery()
    query = (sa.select(ids.c.agent_id, _C.created_at, _C.last_used, _C.revoked_at, _C.reenroll,
                       t.agents.c.id.is_not(None).label("registered"))
             .select_from(ids.outerjoin(t.agent_credentials, _C.agent_id == ids.c.agent_id)
                          .outerjoin(t.agents, t.agents.c.id == ids.c.agent_id))
             .order_by(ids.c.agent_id))
    return list(conn.execute(query).mappings().all())


def reach(conn: Conn, agent_id: str, allocation_ids: Iterable[str]) -> dict[str, int | None]:
    """Of `allocation_ids`, those with a container on `agent_id` (in any state: an agent reports exits and ships
    lines after the end), each with its trial id (None for a command's)."""
    ids = list(allocation_ids)
    if not ids:
        return {}
    containers = t.allocation_containers.c
    rows = conn.execute(
        sa.select(t.allocations.c.id, t.allocations.c.trial_id)
        .join(t.allocation_containers, containers.allocation_id == t.allocations.c.id)
        .where(t.allocations.c.id.in_(ids), containers.agent_id == agent_id))
    return {r.id: (None if r.trial_id is None else int(r.trial_id)) for r in rows}


def existing(conn: Conn, allocation_ids: Iterable[str]) -> set[str]:
    """Which of `allocation_ids` the master has."""
    ids = list(allocation_ids)
    if not ids:
        return set()
    return set(conn.execute(sa.select(t.allocations.c.id).where(t.allocations.c.id.in_(ids))).scalars())
