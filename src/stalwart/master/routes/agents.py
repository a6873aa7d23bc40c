"""/api/v1/agents and /api/v1/task/logs: agent registration, the action long-poll, listing, log intake."""

from __future__ import annotations

import sqlalchemy as sa
from fastapi import APIRouter, Query, Request

from stalwart.api.errors import InvalidRequest
from stalwart.api.states import AllocationState as A
from stalwart.db import tables as t
from stalwart.master import agents, auth, views
from stalwart.master.logs import insert_logs
from stalwart.master.routes.common import agent_only, body, master

router = APIRouter(prefix="/api/v1", tags=["agents"])


@router.post("/agents")
async def register(request: Request) -> dict:
    m = agent_only(request)
    return agents.register(m, await body(request))


@router.get("/agents/{agent_id}/actions")
async def actions(request: Request, agent_id: str, timeout: float = 0,
                  known: list[str] = Query(default=[])) -> dict:
    """Long-poll (also the agent's heartbeat): allocations to start and to kill.

    `known` lists the allocations the agent already handles; it returns early only for news.
    """
    m = agent_only(request)
    agents.touch(m, agent_id)
    out = agents.pending_actions(m, agent_id, set(known))
    if not out["start"] and not out["kill"] and timeout > 0:
        await m.signals.wait(f"agent:{agent_id}", min(timeout, 60))
        out = agents.pending_actions(m, agent_id, set(known))
    return out


@router.get("/agents")
async def list_agents(request: Request) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        rows = conn.execute(sa.select(t.agents).order_by(t.agents.c.id)).mappings().all()
        used: dict[str, int] = {}
        for agent_id, slot_ids in conn.execute(
            sa.select(t.allocations.c.agent_id, t.allocations.c.slot_ids).where(
                t.allocations.c.state.in_([A.ASSIGNED.value, A.RUNNING.value]))
        ):
            used[agent_id] = used.get(agent_id, 0) + len(slot_ids or [])
    return {"agents": [views.agent(r, used.get(r["id"], 0)) for r in rows]}


@router.post("/task/logs")
async def task_logs(request: Request) -> dict:
    m = master(request)
    data = await body(request)
    entries = data.get("logs")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InvalidRequest("logs: expected a list of log entries")
    header = request.headers.get(auth.ALLOCATION_HEADER)
    if header:
        allocation_id = auth.require_allocation(request, m.secret)
        with m.db.begin() as conn:
            trial_id = conn.execute(
                sa.select(t.allocations.c.trial_id).where(t.allocations.c.id == allocation_id)).scalar()
        entries = [{**e, "allocation_id": allocation_id, "trial_id": trial_id} for e in entries]
    else:
        auth.require_cluster_token(request, m.cluster_token)
    with m.db.begin() as conn:
        n = insert_logs(conn, entries)
    return {"accepted": n}
