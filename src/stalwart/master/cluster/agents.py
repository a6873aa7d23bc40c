"""Agent sessions: registration and reconciliation with what the agent runs, the action long-poll, enable/disable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.api.models.agents import Agent
from stalwart.api.states import AllocationState as A
from stalwart.master import views as mviews
from stalwart.master.allocations import containers, lifecycle
from stalwart.master.cluster import credentials
from stalwart.master.queries import agents as agent_rows, allocations as allocation_rows
from stalwart.master.queries.rows import Row
from stalwart.master.service import Master, now


def register(m: Master, body: Mapping[str, Any], peer: str | None = None, *,
             caller: credentials.Caller | credentials.InProcess) -> dict[str, Any]:
    """Create or refresh an agent; reconcile the containers it says it runs with ours. `caller`, from the route: the
    agent whose credential came, or None for the cluster token (an enrollment, under the enrollment policy: the
    answer carries the agent's new credential), or `credentials.IN_PROCESS`: the master itself registers the agent
    (tests, tools: no HTTP caller, so nothing to check and no credential given). Required, so that no route can
    forget to say who called."""
    agent_id = str(body.get("agent_id") or "").strip()
    if not agent_id:
        raise InvalidRequest("agent_id: required")
    slots = body.get("slots")
    if not isinstance(slots, int) or slots < 0:
        raise InvalidRequest(f"slots: expected an integer >= 0, got {slots!r}")
    running = set(body.get("running_allocations") or [])
    pool = str(body.get("resource_pool") or "default")
    if m.settings.cluster.pool(pool) is None:
        raise InvalidRequest(f"resource_pool: this master has no pool {pool!r}; its pools are: "
                             f"{', '.join(m.settings.cluster.pool_names)}")
    _check_pool_takes_agents(m, pool, agent_id, caller)
    incarnation = str(body.get("incarnation") or "")[:64] or None
    values = dict(
        incarnation=incarnation,
        hostname=str(body.get("hostname") or ""),
        address=str(body.get("address") or peer or "") or None,
        resource_pool=pool,
        slots=slots,
        slot_type=str(body.get("slot_type") or "cpu"),
        connected=True,
        last_seen=now(),
    )
    with m.db.begin() as conn:
        credential = None if isinstance(caller, credentials.InProcess) else credentials.admit(
            m, conn, agent_id, caller, peer, incarnation, _text(body.get("replaces")))
        exists = agent_rows.find(conn, agent_id)
        if exists:
            _check_takeover(m, exists, incarnation, body.get("replaces"))
            if exists["allocation_id"] is not None:  # a job's one-shot agent: its pool and slots are the master's
                values.update(resource_pool=exists["resource_pool"], slots=exists["slots"])
            agent_rows.update(conn, agent_id, values)
        else:
            agent_rows.insert(conn, agent_id, {"enabled": True, "registered_at": now(), **values})
        ours = containers.on_agent(conn, agent_id)
        for c in ours:
            alloc_id = c["allocation_id"]
            if c["state"] in (A.RUNNING.value, containers.KILLING) and alloc_id not in running:
                if c["state"] == A.RUNNING.value:
                    lifecycle.lose_container(m, conn, alloc_id, agent_id)
                else:
                    containers.set_state(conn, alloc_id, agent_id, A.TERMINATED.value)
            elif c["state"] == A.ASSIGNED.value and alloc_id in running:
                lifecycle.container_started(conn, alloc_id, agent_id, None)
        live = {c["allocation_id"] for c in ours}
        stale = [a for a in running if a not in live]
    m.wake_scheduler()
    return {"agent_id": agent_id, "kill": stale, "cluster_id": m.cluster_id,
            "agent_timeout": m.settings.agent_timeout_s, "credential": credential}


def _check_pool_takes_agents(m: Master, pool: str, agent_id: str,
                             caller: credentials.Caller | credentials.InProcess) -> None:
    """Only an agent-manager pool takes agents that join on their own; a Slurm pool's agents are the one-shot
    agents of its jobs (a join credential, or their own credential once enrolled)."""
    kind = m.settings.cluster.resource_manager
    if kind == "agent" or isinstance(caller, (credentials.JoinCaller, credentials.InProcess)):
        return
    if isinstance(caller, str):
        with m.db.begin() as conn:
            row = agent_rows.find(conn, agent_id)
        if row is not None and row["allocation_id"] is not None:
            return
    raise InvalidRequest(f"resource_pool: pool {pool!r} is run by the {kind} resource manager, which starts its own "
                         f"one-shot agent inside each job; agents cannot join it (docs/resource-managers.md). Run "
                         f"this agent against a master whose resource_manager.type is agent")


def _text(value: object) -> str | None:
    return str(value)[:64] if value else None


def _check_takeover(m: Master, row: Row, incarnation: str | None, replaces: object) -> None:
    """One live agent per id. Another process may take an id over only when the one holding it is gone:
    it says it replaced that process (same work directory, whose lock it now holds, and it killed what that
    process left running), or the holder has been silent for `agent_timeout` (then it has killed its own
    processes: see agent/fencing.py) or was already declared lost. Otherwise the newcomer is refused, and
    the live allocations of the holder stay as they are."""
    holder = row["incarnation"]
    if not holder or not incarnation or holder == incarnation or replaces == holder or not row["connected"]:
        return
    silent = now() - row["last_seen"]
    if silent > m.settings.agent_timeout_s:
        return
    raise InvalidStateError(
        f"agent id {row['id']!r} is held by another running agent (host {row['hostname'] or '?'}, last heard from "
        f"{silent:.0f} s ago); stop that agent first, or give this one a different --agent-id. "
        f"It takes over on its own once the other has been silent for {m.settings.agent_timeout_s:.0f} s")


def touch(m: Master, agent_id: str) -> None:
    with m.db.begin() as conn:
        n = agent_rows.update(conn, agent_id, {"last_seen": now(), "connected": True})
    if not n:
        raise InvalidRequest(f"agent {agent_id} is not registered; register it first")


def pending_actions(m: Master, agent_id: str, known: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    with m.db.begin() as conn:
        start: list[dict[str, Any]] = []
        kill: list[str] = []
        for c in containers.on_agent(conn, agent_id):
            alloc = allocation_rows.get(conn, c["allocation_id"])
            if alloc["kill_requested"] or c["state"] == containers.KILLING:
                if not _kill_sent(m, alloc["id"], agent_id):
                    kill.append(alloc["id"])
            elif c["state"] == A.ASSIGNED.value and alloc["id"] not in known:
                order = lifecycle.start_order(m, conn, alloc, c)
                if order is not None:  # None: refused (its OS user is root), the run failed with the reason
                    start.append(order)
    return {"start": start, "kill": kill}


def _kill_sent(m: Master, allocation_id: str, agent_id: str) -> bool:
    """Each kill order goes out once per master process and agent; a re-registering agent gets them again."""
    key = f"{allocation_id}@{agent_id}"
    if key in m.kills_sent:
        return True
    m.kills_sent.add(key)
    return False


def set_enabled(m: Master, agent_id: str, enabled: bool, drain: bool = False) -> Agent:
    """Enable an agent, or disable it: with `drain` its tasks finish and nothing new starts there;
    without, its trials are preempted (they checkpoint and resume elsewhere) and its commands killed."""
    with m.db.begin() as conn:
        agent_rows.get(conn, agent_id)
        agent_rows.update(conn, agent_id, {"enabled": enabled, "draining": bool(drain) and not enabled})
        if not enabled and not drain:
            for c in containers.on_agent(conn, agent_id):
                alloc = allocation_rows.get(conn, c["allocation_id"])
                if alloc["state"] == A.TERMINATED.value:
                    continue
                if alloc["command_id"] is not None:
                    lifecycle.request_kill(m, conn, alloc)
                else:
                    lifecycle.request_preemption(m, conn, alloc["id"])
        row = agent_rows.get(conn, agent_id)
        used = containers.used_slots(conn)
    m.wake_scheduler()
    return Agent.model_validate(mviews.agent(row, len(used.get(agent_id, ()))))
