"""Reads and writes of the allocation_containers table: one row per agent an allocation runs on (rank order)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from stalwart.api.states import AllocationState as A
from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_C = t.allocation_containers.c


def add(conn: Conn, allocation_id: str, placed: Iterable[tuple[str, Sequence[int]]]) -> None:
    """One ASSIGNED container per (agent id, slot ids), ranked in the order given (rank 0 is the chief)."""
    for rank, (agent_id, slot_ids) in enumerate(placed):
        conn.execute(t.allocation_containers.insert().values(
            allocation_id=allocation_id, container_rank=rank, agent_id=agent_id, slot_ids=list(slot_ids),
            state=A.ASSIGNED.value))


def of_allocation(conn: Conn, allocation_id: str) -> list[dict[str, Any]]:
    """An allocation's containers in rank order (plain dicts: callers may annotate them)."""
    return [dict(r) for r in conn.execute(
        sa.select(t.allocation_containers).where(_C.allocation_id == allocation_id)
        .order_by(_C.container_rank)).mappings()]


def live_on_agent(conn: Conn, agent_id: str) -> list[dict[str, Any]]:
    """This agent's containers that still hold slots (not TERMINATED)."""
    return [dict(r) for r in conn.execute(
        sa.select(t.allocation_containers).where(_C.agent_id == agent_id,
                                                 _C.state != A.TERMINATED.value)).mappings()]


def used_slots(conn: Conn) -> dict[str, set[int]]:
    """Agent id -> the slot ids its live containers hold."""
    used: dict[str, set[int]] = {}
    for row in conn.execute(sa.select(_C.agent_id, _C.slot_ids).where(_C.state != A.TERMINATED.value)):
        used.setdefault(row.agent_id, set()).update(row.slot_ids or [])
    return used


def live_with_tasks(conn: Conn) -> list[Row]:
    """Live containers with the trial_id and command_id of their allocation."""
    return list(conn.execute(
        sa.select(t.allocation_containers, t.allocations.c.trial_id, t.allocations.c.command_id)
        .join(t.allocations, t.allocations.c.id == _C.allocation_id)
        .where(_C.state != A.TERMINATED.value)
    ).mappings().all())


def set_state(conn: Conn, allocation_id: str, agent_id: str, state: str,
              values: Mapping[str, Any] | None = None) -> None:
    """Set the state of the allocation's container on `agent_id`, and the other column `values` given."""
    conn.execute(t.allocation_containers.update().where(
        _C.allocation_id == allocation_id, _C.agent_id == agent_id,
    ).values(state=state, **(values or {})))


def release(conn: Conn, allocation_id: str, keep: Sequence[str]) -> None:
    """The allocation ended: its containers in no state of `keep` become TERMINATED (their slots are free)."""
    conn.execute(t.allocation_containers.update().where(
        _C.allocation_id == allocation_id, _C.state.notin_(list(keep)),
    ).values(state=A.TERMINATED.value))


def live_placements(conn: Conn) -> dict[str, list[tuple[str, tuple[int, ...]]]]:
    """Allocation id -> its live containers' (agent id, slot ids), in rank order."""
    placed: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    for c in conn.execute(sa.select(t.allocation_containers).where(_C.state != A.TERMINATED.value)
                          .order_by(_C.container_rank)).mappings():
        placed.setdefault(c["allocation_id"], []).append((c["agent_id"], tuple(c["slot_ids"] or ())))
    return placed
