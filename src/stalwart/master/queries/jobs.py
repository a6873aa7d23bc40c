"""Reads and writes of the jobs table: the queue every experiment and command waits in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_J = t.jobs.c
EXPERIMENT, COMMAND = "EXPERIMENT", "COMMAND"
"""A job's `type`: an experiment's job or a command's."""


def last_queue_position(conn: Conn) -> float:
    """The largest queue position of any job (0.0 when the queue is empty)."""
    return float(conn.execute(sa.select(sa.func.max(_J.queue_position))).scalar() or 0.0)


def insert(conn: Conn, job_id: str, *, kind: str, entity_id: int, priority: int, weight: float,
           max_slots: int | None, resource_pool: str, queue_position: float, submitted_at: float) -> None:
    """File a new job."""
    conn.execute(t.jobs.insert().values(
        id=job_id, type=kind, entity_id=entity_id, priority=priority, weight=weight, max_slots=max_slots,
        resource_pool=resource_pool, queue_position=queue_position, submitted_at=submitted_at))


def find(conn: Conn, job_id: str) -> Row | None:
    """One job, or None."""
    return conn.execute(sa.select(t.jobs).where(_J.id == job_id)).mappings().first()


def of_entity(conn: Conn, kind: str, entity_id: int) -> Row | None:
    """The job of one experiment or command (`kind` EXPERIMENT or COMMAND), or None."""
    return conn.execute(sa.select(t.jobs).where(_J.type == kind, _J.entity_id == entity_id)).mappings().first()


def pool_of(conn: Conn, kind: str, entity_id: int) -> str | None:
    """The resource pool of one experiment's or command's job, or None when it has no job."""
    pool: str | None = conn.execute(
        sa.select(_J.resource_pool).where(_J.type == kind, _J.entity_id == entity_id)).scalar()
    return pool


def pools_by_entity(conn: Conn, kind: str) -> dict[int, str]:
    """Entity id -> resource pool of every job of `kind`."""
    return {int(e): str(p) for e, p in conn.execute(
        sa.select(_J.entity_id, _J.resource_pool).where(_J.type == kind)).all()}


def in_queue_order(conn: Conn) -> list[Row]:
    """Every job by (priority, queue position, submitted at)."""
    return list(conn.execute(
        sa.select(t.jobs).order_by(_J.priority, _J.queue_position, _J.submitted_at)).mappings().all())


def update(conn: Conn, job_id: str, values: Mapping[str, Any]) -> None:
    """Set the column `values` of one job."""
    conn.execute(t.jobs.update().where(_J.id == job_id).values(**values))


def others_of_priority(conn: Conn, priority: int, except_id: str) -> list[tuple[str, float]]:
    """(id, queue position) of the jobs of one priority but `except_id`, in queue order."""
    return [(r.id, r.queue_position) for r in conn.execute(
        sa.select(_J.id, _J.queue_position).where(_J.priority == priority, _J.id != except_id)
        .order_by(_J.queue_position, _J.submitted_at)).all()]
