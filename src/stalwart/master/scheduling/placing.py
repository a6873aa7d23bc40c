"""Rows ↔ resource-manager values: the live allocations as gangs (what `ResourceManager.submit` gets), and what a
manager decides written back: a gang's start (container rows the nodes' action long-poll picks up) and the reasons
what still waits gives (what `job list` shows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stalwart.api.states import AllocationState as A
from stalwart.master.allocations import containers
from stalwart.master.queries import allocations as allocation_rows
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master
from stalwart.rm import Gang
from stalwart.scheduler import Container


def gang_of(row: Mapping[str, Any]) -> Gang:
    """One live allocation row (with its job's queue fields, `allocation_rows.live_with_jobs`) as a gang; a run
    whose job is gone keeps the defaults the scheduler always gave it."""
    return Gang(
        allocation_id=row["id"], job_id=row["job_id"] or row["id"], pool=row["resource_pool"] or "default",
        slots=row["slots"], state=row["state"],
        priority=row["priority"] if row["priority"] is not None else 42,
        weight=row["weight"] if row["weight"] is not None else 1.0, max_slots=row["max_slots"],
        queue_position=row["queue_position"] or 0.0, submitted_at=row["created_at"],
        preemptible=row["command_id"] is None, preempt_requested=bool(row["preempt_requested"]),
        kill_requested=bool(row["kill_requested"]), pending_reason=row["pending_reason"],
    )


def live_gangs(conn: Conn) -> list[Gang]:
    """Every allocation that has not ended, as a gang."""
    return [gang_of(r) for r in allocation_rows.live_with_jobs(conn)]


def record_reasons(conn: Conn, gangs: Sequence[Gang], reasons: Mapping[str, str]) -> None:
    """Each PENDING gang's reason to wait (none: cleared), written where it changed."""
    for g in gangs:
        if g.state == A.PENDING.value and g.pending_reason != reasons.get(g.allocation_id):
            allocation_rows.set_pending_reason(conn, g.allocation_id, reasons.get(g.allocation_id))


def start_gang(m: Master, conn: Conn, allocation_id: str, placed: Sequence[Container], *, backfilled: bool) -> bool:
    """A PENDING allocation starts on `placed` (node id, slot ids), chief first: ASSIGNED, one container row each
    (a rendezvous port when there are several), and each node woken. False when it was no longer PENDING."""
    chief, chief_slots = placed[0]
    gang_port = containers.rendezvous_port(allocation_id) if len(placed) > 1 else None
    if not allocation_rows.assign(conn, allocation_id, agent_id=chief, slot_ids=list(chief_slots),
                                  backfilled=backfilled, rendezvous_port=gang_port):
        return False
    containers.add(conn, allocation_id, placed)
    for node, _ in placed:
        m.signals.notify(f"agent:{node}")
    return True
