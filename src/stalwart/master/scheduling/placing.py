"""The master side of a scheduling pass: rows → `scheduler.schedule` input, its decision → rows and wake-ups."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.api.states import AllocationState as A
from stalwart.db import tables as t
from stalwart.master.allocations import containers, lifecycle
from stalwart.master.scheduling.jobs import COMMAND, EXPERIMENT
from stalwart.master.service import Master
from stalwart.scheduler import AgentState, PoolPolicy, Request, schedule


def _live(conn) -> list[dict]:
    j = t.jobs
    q = (
        sa.select(t.allocations, j.c.id.label("job_id"), j.c.priority, j.c.weight, j.c.max_slots,
                  j.c.resource_pool, j.c.queue_position)
        .select_from(
            t.allocations.outerjoin(t.trials, t.trials.c.id == t.allocations.c.trial_id).outerjoin(j, sa.or_(
                sa.and_(j.c.type == EXPERIMENT, j.c.entity_id == t.trials.c.experiment_id),
                sa.and_(j.c.type == COMMAND, j.c.entity_id == t.allocations.c.command_id))))
        .where(t.allocations.c.state != A.TERMINATED.value)
    )
    return [dict(r) for r in conn.execute(q).mappings()]


def _request(row: dict, placed: dict[str, list]) -> Request:
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


def _agents(conn) -> list[AgentState]:
    used = containers.used_slots(conn)
    return [
        AgentState(a["id"], a["resource_pool"], a["slots"],
                   tuple(i for i in range(a["slots"]) if i not in used.get(a["id"], set())),
                   accepting=bool(a["connected"] and a["enabled"] and not a["draining"]))
        for a in conn.execute(sa.select(t.agents)).mappings()
    ]


def policies(m: Master) -> dict[str, PoolPolicy]:
    return {p.name: PoolPolicy(p.scheduler.type, p.scheduler.fitting_policy, p.scheduler.preemption)
            for p in m.settings.cluster.pools}


def place(m: Master, conn) -> None:
    rows = _live(conn)
    if not any(r["state"] == A.PENDING.value for r in rows):
        return
    placed: dict[str, list] = {}
    for c in conn.execute(sa.select(t.allocation_containers).where(
            t.allocation_containers.c.state != A.TERMINATED.value)
            .order_by(t.allocation_containers.c.container_rank)).mappings():
        placed.setdefault(c["allocation_id"], []).append((c["agent_id"], tuple(c["slot_ids"] or ())))
    decision = schedule([_request(r, placed) for r in rows], _agents(conn), policies(m))
    for start in decision.starts:
        chief, chief_slots = start.containers[0]
        n = conn.execute(
            t.allocations.update()
            .where(t.allocations.c.id == start.allocation_id, t.allocations.c.state == A.PENDING.value)
            .values(state=A.ASSIGNED.value, agent_id=chief, slot_ids=list(chief_slots), backfilled=start.backfilled,
                    pending_reason=None,
                    rendezvous_port=containers.rendezvous_port(start.allocation_id) if len(start.containers) > 1 else None)
        ).rowcount
        if n:
            containers.add(conn, start.allocation_id, start.containers)
            for agent_id, _ in start.containers:
                m.signals.notify(f"agent:{agent_id}")
    for allocation_id in decision.preemptions:
        lifecycle.request_preemption(m, conn, allocation_id)
    for r in rows:
        if r["state"] == A.PENDING.value and r["pending_reason"] != decision.unschedulable.get(r["id"]):
            conn.execute(t.allocations.update().where(t.allocations.c.id == r["id"])
                         .values(pending_reason=decision.unschedulable.get(r["id"])))
