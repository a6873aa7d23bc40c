"""Rows ↔ resource-manager values: the live allocations as gangs (what `ResourceManager.submit` gets), and what a
manager decides written back: a gang's start (container rows the nodes' action long-poll picks up) and the reasons
what still waits gives (what `job list` shows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stalwart.api.states import AllocationState as A
from stalwart.master.allocations import containers
from stalwart.master.queries import allocations as allocation_rows, log_policies as policy_rows
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master
from stalwart.rm import Gang, NodeContainer, QueueEntry, RunStatus
from stalwart.scheduler import Container


def gang_of(row: Mapping[str, Any], excluded: frozenset[str] = frozenset()) -> Gang:
    """One live allocation row (with its job's queue fields, `allocation_rows.live_with_jobs`) as a gang; a run
    whose job is gone keeps the defaults the scheduler always gave it. `excluded`: the agents it may not use."""
    return Gang(
        allocation_id=row["id"], job_id=row["job_id"] or row["id"], pool=row["resource_pool"] or "default",
        slots=row["slots"], state=row["state"],
        priority=row["priority"] if row["priority"] is not None else 42,
        weight=row["weight"] if row["weight"] is not None else 1.0, max_slots=row["max_slots"],
        queue_position=row["queue_position"] or 0.0, submitted_at=row["created_at"],
        preemptible=row["command_id"] is None, preempt_requested=bool(row["preempt_requested"]),
        kill_requested=bool(row["kill_requested"]), pending_reason=row["pending_reason"], excluded_nodes=excluded,
    )


def live_gangs(conn: Conn) -> list[Gang]:
    """Every allocation that has not ended, as a gang; a pending trial run without the agents where its earlier
    runs' logs matched an `exclude_node` log policy (master/log_policies.py)."""
    rows = allocation_rows.live_with_jobs(conn)
    pending = [r["trial_id"] for r in rows if r["trial_id"] is not None and r["state"] == A.PENDING.value]
    excluded = policy_rows.excluded_agents(conn, pending)
    return [gang_of(r, excluded.get(r["trial_id"], frozenset()) if r["state"] == A.PENDING.value else frozenset())
            for r in rows]


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


def run_status(conn: Conn, allocation_id: str) -> RunStatus:
    """A run as its rows say: state, containers in rank order (node, address, slots), reasons, exit."""
    alloc = allocation_rows.get(conn, allocation_id)
    conts = containers.of_allocation(conn, allocation_id)
    addrs = containers.addresses(conn, allocation_id)
    return RunStatus(
        allocation_id=allocation_id, state=alloc["state"],
        containers=tuple(NodeContainer(c["container_rank"], c["agent_id"], addr, tuple(c["slot_ids"] or ()),
                                       c["state"]) for c, addr in zip(conts, addrs, strict=True)),
        pending_reason=alloc["pending_reason"], preempt_requested=bool(alloc["preempt_requested"]),
        kill_requested=bool(alloc["kill_requested"]), exit_code=alloc["exit_code"], exit_reason=alloc["exit_reason"])


def queue_of(conn: Conn, pools: Sequence[str]) -> list[QueueEntry]:
    """The live runs of `pools` in queue order (priority, queue position, submission) with their reasons."""
    rows = [(gang_of(r), r) for r in allocation_rows.live_with_jobs(conn)]
    mine = sorted(((g, r) for g, r in rows if g.pool in pools),
                  key=lambda gr: (gr[0].priority, gr[0].queue_position, gr[0].submitted_at, gr[0].allocation_id))
    return [QueueEntry(g.allocation_id, g.pool, g.state, g.slots, bool(r["backfilled"]), g.pending_reason)
            for g, r in mine]
