"""/api/v1/agents and /api/v1/task/logs: agent registration, the action long-poll, listing, log intake."""

from __future__ import annotations

import json

import sqlalchemy as sa
from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from stalwart.api.errors import InvalidRequest
from stalwart.api.states import AllocationState as A
from stalwart.db import tables as t
from stalwart.master import views
from stalwart.master.allocations import containers
from stalwart.master.auth import tokens
from stalwart.master.cluster import agents
from stalwart.master.log_rows import body_rows
from stalwart.master.logs import store_rows
from stalwart.master.routes.common import agent_only, body, master
from stalwart.master.service import now

router = APIRouter(prefix="/api/v1", tags=["agents"])


@router.post("/agents")
async def register(request: Request) -> dict:
    m = agent_only(request)
    return agents.register(m, await body(request), request.client.host if request.client else None)


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
        # answer well within agent_timeout: each poll is the agent's heartbeat, and its lease (agent/fencing.py)
        # must outlast a master restart counted from the last poll sent
        await m.signals.wait(f"agent:{agent_id}", min(timeout, 60, m.settings.agent_timeout_s / 6))
        out = agents.pending_actions(m, agent_id, set(known))
    return out


@router.get("/agents")
async def list_agents(request: Request) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        rows = conn.execute(sa.select(t.agents).order_by(t.agents.c.id)).mappings().all()
        used = containers.used_slots(conn)
    return {"agents": [views.agent(r, len(used.get(r["id"], ()))) for r in rows]}


@router.post("/agents/{agent_id}/enable")
async def enable(request: Request, agent_id: str) -> dict:
    return {"agent": agents.set_enabled(master(request), agent_id, True)}


@router.post("/agents/{agent_id}/disable")
async def disable(request: Request, agent_id: str) -> dict:
    """Body: {"drain": bool}. Draining lets running tasks finish; otherwise they are preempted or killed."""
    data = await body(request)
    return {"agent": agents.set_enabled(master(request), agent_id, False, bool(data.get("drain", False)))}


@router.get("/slots")
async def list_slots(request: Request) -> dict:
    """Every slot of every agent, with the allocation (and task) using it."""
    m = master(request)
    with m.db.begin() as conn:
        rows = conn.execute(sa.select(t.agents).order_by(t.agents.c.id)).mappings().all()
        holders = {}
        for c in conn.execute(
            sa.select(t.allocation_containers, t.allocations.c.trial_id, t.allocations.c.command_id)
            .join(t.allocations, t.allocations.c.id == t.allocation_containers.c.allocation_id)
            .where(t.allocation_containers.c.state != A.TERMINATED.value)
        ).mappings():
            task = f"command-{c['command_id']}" if c["command_id"] is not None else f"trial-{c['trial_id']}"
            for i in c["slot_ids"] or []:
                holders[(c["agent_id"], i)] = (c["allocation_id"], task)
    slots = []
    for a in rows:
        for i in range(a["slots"]):
            alloc, task = holders.get((a["id"], i), (None, None))
            slots.append({"agent_id": a["id"], "slot_id": i, "type": a["slot_type"],
                          "enabled": bool(a["enabled"]), "draining": bool(a["draining"]),
                          "allocation_id": alloc, "task_id": task})
    return {"slots": slots}


@router.post("/task/logs")
async def task_logs(request: Request) -> dict:
    """Body: {"logs": [{log, timestamp, stdtype, trial_id, allocation_id, ...}]} and/or (what agents send)
    {"runs": [{allocation_id, trial_id, agent_id, rank_id, stdtype, source, level, lines: [[timestamp, text]]}]},
    from an agent (cluster token) or a trial (allocation token: the lines are filed under its allocation).

    The body is parsed and checked in a worker thread; the rows go in with one transaction per batch: from the
    worker thread on PostgreSQL, on the event loop on SQLite. SQLite has one writer at a time, and a writer on
    another thread inserting batch after batch starves the loop's own writes (they wait in SQLite's busy
    handler, holding up the loop: over a second measured); an agent's batch takes tens of ms to insert."""
    m = master(request)
    allocation_id = None
    if request.headers.get(tokens.ALLOCATION_HEADER):
        allocation_id = tokens.require_allocation(request, m.secret)
    else:
        tokens.require_cluster_token(request, m.cluster_token)
    rows = await run_in_threadpool(_rows, await request.body())
    if m.db.is_sqlite:
        n = store_rows(m.db, rows, allocation_id)
    else:
        n = await run_in_threadpool(store_rows, m.db, rows, allocation_id)
    return {"accepted": n}


def _rows(raw: bytes) -> list[tuple]:
    try:
        data = json.loads(raw) if raw else {}
    except ValueError as err:
        raise InvalidRequest(f"request body is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise InvalidRequest('request body must be a JSON object: {"logs": [...]}')
    return body_rows(data, now())
