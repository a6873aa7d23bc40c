"""The master side of a scheduling pass: rows → `scheduler.schedule` input, its decision → rows and wake-ups."""

from __future__ import annotations

from typing import Any

from stalwart.api.states import AllocationState as A
from stalwart.master.allocations import containers, lifecycle
from stalwart.master.queries import agents as agent_rows, allocations as allocation_rows, containers as container_rows
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master
from stalwart.scheduler import AgentState, PoolPolicy, Request, schedule


def _live(conn: Conn) -> list[dict[str, Any]]:
    return allocation_rows.live_with_jobs(conn)


def _request(row: dict[str, Any], placed: dict[str, list[tuple[str, tuple[int, ...]]]]) -> Request:
    return Request(
        allocation_id=row["id"], job_id=row["job_id"] or row["id"], slots=row["slots"],
        resource_pool=row["resource_pool"] or "default",
        priority=row["priority"] if row["priority"] is not None else 42,
        weight=row["weight"] if row["weight"] is not None else 1.0, max_slots=row["max_slots"],
        queue_position=row["queue_position"] or 0.0, submitted_at=row["created_at"],
        preemptible=row["command_id"] is None,
        containers=tuple(placed.get(row["id"], ())) if row["state"] != A.PENDING.value else (),
        preempting=bool(row["preempt_requested"]),
    )


def _agents(conn: Conn) -> list[AgentState]:
    used = containers.used_slots(conn)
    return [
        AgentState(a["id"], a["resource_pool"], a["slots"],
                   tuple(i for i in range(a["slots"]) if i not in used.get(a["id"], set())),
                   accepting=bool(a["connected"] and a["enabled"] and not a["draining"]))
        for a in agent_rows.every(conn)
    ]


def policies(m: Master) -> dict[str, PoolPolicy]:
    return {p.name: PoolPolicy(p.scheduler.type, p.scheduler.fitting_policy, p.scheduler.preemption)
            for p in m.settings.cluster.pools}


def place(m: Master, conn: Conn) -> None:
    rows = _live(conn)
    if not any(r["state"] == A.PENDING.value for r in rows):
        return
    placed = container_rows.live_placements(conn)
    decision = schedule([_request(r, placed) for r in rows], _agents(conn), policies(m))
    for start in decision.starts:
        chief, chief_slots = start.containers[0]
        gang_port = containers.rendezvous_port(start.allocation_id) if len(start.containers) > 1 else None
        if allocation_rows.assign(conn, start.allocation_id, agent_id=chief, slot_ids=list(chief_slots),
                                  backfilled=start.backfilled, rendezvous_port=gang_port):
            containers.add(conn, start.allocation_id, start.containers)
            for agent_id, _ in start.containers:
                m.signals.notify(f"agent:{agent_id}")
    for allocation_id in decision.preemptions:
        lifecycle.request_preemption(m, conn, allocation_id)
    for r in rows:
        if r["state"] == A.PENDING.value and r["pending_reason"] != decision.unschedulable.get(r["id"]):
            allocation_rows.set_pending_reason(conn, r["id"], decision.unschedulable.get(r["id"]))
