"""/api/v1/agents and /api/v1/task/logs: agent enrollment and registration, the action long-poll, listing, agents'
credentials (list, revoke), log intake."""

from __future__ import annotations

import functools
import json
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from starlette.concurrency import run_in_threadpool

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.agents import (
    Actions,
    Agent,
    AgentCredentialList,
    AgentEnvelope,
    AgentList,
    DisableAgent,
    RegisterAgent,
    Registered,
    RevokeAgentCredential,
    RevokedAgentCredential,
    Slot,
    SlotList,
)
from stalwart.api.models.trials import Accepted
from stalwart.master import log_policies, views
from stalwart.master.allocations import env
from stalwart.master.cluster import agents, credentials
from stalwart.master.identity import authz
from stalwart.master.log_rows import Row as LogRow, body_rows
from stalwart.master.logs import store_rows
from stalwart.master.queries import agents as agent_rows, containers as container_rows
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route
from stalwart.master.service import now

router = APIRouter(prefix="/api/v1", tags=["agents"])

AgentPath = Annotated[str, Path(min_length=1, max_length=255, description="an agent id")]
PollSeconds = Annotated[float, Query(ge=0, le=3600, allow_inf_nan=False,
                                     description="seconds to wait for news before answering (capped at 60)")]
Known = Annotated[list[str] | None, Query(description="allocations the agent already handles")]


@route(router, "POST", "/agents")
async def register(request: Request, payload: RegisterAgent) -> Registered:
    """Enrollment (the cluster token: the answer carries the agent's new credential) or a registration of the agent
    whose credential came."""
    peer = request.client.host if request.client else None
    answer = agents.register(master(request), payload.model_dump(), peer, caller=request.state.agent_id)
    return Registered.model_validate(answer)


@route(router, "GET", "/agents/{agent_id}/actions")
async def actions(request: Request, agent_id: AgentPath, timeout: PollSeconds = 0,
                  known: Known = None) -> Actions:
    """Long-poll (also the agent's heartbeat): allocations to start and to kill.

    `known` lists the allocations the agent already handles; it returns early only for news.
    """
    m = master(request)
    agents.touch(m, agent_id)
    handled = set(known or ())
    out = agents.pending_actions(m, agent_id, handled)
    if not out["start"] and not out["kill"] and timeout > 0:
        # answer well within agent_timeout: each poll is the agent's heartbeat, and its lease (agent/fencing.py)
        # must outlast a master restart counted from the last poll sent
        await m.signals.wait(f"agent:{agent_id}", min(timeout, 60, m.settings.agent_timeout_s / 6))
        credentials.authenticate(m, request)  # revoked while it waited: no start order goes out
        out = agents.pending_actions(m, agent_id, handled)
    return Actions.model_validate(out)


@route(router, "GET", "/agents")
async def list_agents(request: Request) -> AgentList:
    m = master(request)
    with m.db.begin() as conn:
        rows = agent_rows.in_id_order(conn)
        used = container_rows.used_slots(conn)
    return AgentList(agents=[Agent.model_validate(views.agent(r, len(used.get(r["id"], ())))) for r in rows])


@route(router, "POST", "/agents/{agent_id}/enable")
async def enable(request: Request, agent_id: AgentPath) -> AgentEnvelope:
    return AgentEnvelope(agent=agents.set_enabled(master(request), agent_id, True))


@route(router, "POST", "/agents/{agent_id}/disable")
async def disable(request: Request, agent_id: AgentPath, payload: DisableAgent) -> AgentEnvelope:
    """Draining (`drain`) lets running tasks finish; otherwise ({} too) they are preempted or killed."""
    return AgentEnvelope(agent=agents.set_enabled(master(request), agent_id, False, payload.drain))


@route(router, "GET", "/agents/credentials")
async def list_credentials(request: Request) -> AgentCredentialList:
    """Every agent's credential: created, last used, revoked (never the credential itself)."""
    return AgentCredentialList(credentials=credentials.listing(master(request)))


@route(router, "POST", "/agents/{agent_id}/revoke")
async def revoke(request: Request, agent_id: AgentPath, payload: RevokeAgentCredential) -> RevokedAgentCredential:
    """Cut an agent off: its credential is refused from its next call on; it is lost after agent_timeout."""
    return RevokedAgentCredential(credential=credentials.revoke(master(request), agent_id, payload.reenroll))


@route(router, "GET", "/slots")
async def list_slots(request: Request) -> SlotList:
    """Every slot of every agent, with the allocation (and task) using it."""
    m = master(request)
    with m.db.begin() as conn:
        rows = agent_rows.in_id_order(conn)
        holders: dict[tuple[str, int], tuple[str | None, str | None]] = {}
        for c in container_rows.live_with_tasks(conn):
            task_id = f"command-{c['command_id']}" if c["command_id"] is not None else f"trial-{c['trial_id']}"
            for i in c["slot_ids"] or []:
                holders[(c["agent_id"], i)] = (c["allocation_id"], task_id)
    slots: list[Slot] = []
    for a in rows:
        for i in range(a["slots"]):
            alloc, task = holders.get((a["id"], i), (None, None))
            slots.append(Slot(agent_id=a["id"], slot_id=i, type=a["slot_type"], enabled=bool(a["enabled"]),
                              draining=bool(a["draining"]), allocation_id=alloc, task_id=task))
    return SlotList(slots=slots)


@route(router, "POST", "/task/logs", parses_body=True)
async def task_logs(request: Request) -> Accepted:
    """Body (`TaskLogs`): {"logs": [{log, timestamp, stdtype, trial_id, allocation_id, ...}]} and/or (what agents
    send) {"runs": [{allocation_id, trial_id, agent_id, rank_id, stdtype, source, level, lines: [[timestamp, text]]}]},
    from an agent (its credential: only lines of its own allocations, filed under them) or a trial (allocation
    token: the lines are filed under its allocation).

    The body is parsed and checked in a worker thread (master/log_rows.py, which accepts what `TaskLogs` accepts,
    faster); the rows go in with one transaction per batch: from the worker thread on PostgreSQL, on the event loop
    on SQLite. SQLite has one writer at a time, and a writer on another thread inserting batch after batch starves
    the loop's own writes (they wait in SQLite's busy handler, holding up the loop: over a second measured); an
    agent's batch takes tens of ms to insert."""
    m = master(request)
    allocation_id: str | None = request.state.allocation_id
    if allocation_id is not None:  # a trial's own lines: only while its allocation lives
        authz.require_live_allocation(m, allocation_id)
    rows = await run_in_threadpool(_rows, await request.body())
    if request.state.agent_id is not None:  # an agent's lines: only its own allocations', filed under them
        rows = await run_in_threadpool(credentials.own_log_rows, m, request.state.agent_id, rows)
    masked = functools.partial(env.secrets_of, m)  # the tokens a task was given never reach its stored logs
    watch = functools.partial(log_policies.watch, m)  # the experiments' log policies see every trial line
    if m.db.is_sqlite:
        n = store_rows(m.db, rows, allocation_id, masked, watch)
    else:
        n = await run_in_threadpool(store_rows, m.db, rows, allocation_id, masked, watch)
    return Accepted(accepted=n)


def _rows(raw: bytes) -> list[LogRow]:
    try:
        data = json.loads(raw) if raw else {}
    except ValueError as err:
        raise InvalidRequest(f"request body is not valid JSON: {err}") from None
    except RecursionError:
        raise InvalidRequest("request body is nested too deeply to parse") from None
    if not isinstance(data, dict):
        raise InvalidRequest('request body must be a JSON object: {"logs": [...]} or {"runs": [...]}')
    return body_rows(data, now())
