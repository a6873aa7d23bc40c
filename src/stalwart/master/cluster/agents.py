"""Agent sessions: registration and reconciliation, the action long-poll, and what a start order holds."""

from __future__ import annotations

import json
import urllib.parse

import sqlalchemy as sa

from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.api.states import AllocationState as A, ExitReason
from stalwart.config import views
from stalwart.db import tables as t
from stalwart.master.tasks import commands
from stalwart.master.allocations import containers
from stalwart.master.experiments import trials
from stalwart.master import views as mviews
from stalwart.master.service import Master, now


def register(m: Master, body: dict, peer: str | None = None) -> dict:
    """Create or refresh an agent; reconcile the containers it says it runs with ours."""
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
        exists = conn.execute(sa.select(t.agents).where(t.agents.c.id == agent_id)).mappings().first()
        if exists:
            _check_takeover(m, exists, incarnation, body.get("replaces"))
            conn.execute(t.agents.update().where(t.agents.c.id == agent_id).values(**values))
        else:
            conn.execute(t.agents.insert().values(id=agent_id, enabled=True, registered_at=now(), **values))
        ours = containers.on_agent(conn, agent_id)
        for c in ours:
            alloc_id = c["allocation_id"]
            if c["state"] in (A.RUNNING.value, containers.KILLING) and alloc_id not in running:
                containers.set_state(conn, alloc_id, agent_id, A.TERMINATED.value)
                if c["state"] == A.RUNNING.value:
                    containers.kill_others(m, conn, alloc_id, agent_id)
                    trials.allocation_exited(m, conn, alloc_id, None, ExitReason.AGENT_LOST)
            elif c["state"] == A.ASSIGNED.value and alloc_id in running:
                _container_started(conn, alloc_id, agent_id, None)
        live = {c["allocation_id"] for c in ours}
        stale = [a for a in running if a not in live]
    m.wake_scheduler()
    return {"agent_id": agent_id, "kill": stale, "cluster_id": m.cluster_id,
            "agent_timeout": m.settings.agent_timeout_s}


def _check_takeover(m: Master, row, incarnation: str | None, replaces) -> None:
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


def _container_started(conn, allocation_id: str, agent_id: str, pid: int | None) -> None:
    """One container runs; the allocation is RUNNING once all of its containers are."""
    containers.set_state(conn, allocation_id, agent_id, A.RUNNING.value, pid=pid)
    conts = containers.of_allocation(conn, allocation_id)
    if all(c["state"] == A.RUNNING.value for c in conts):
        alloc = Master.get_row(conn, t.allocations, allocation_id, "allocation")
        conn.execute(t.allocations.update().where(t.allocations.c.id == allocation_id).values(
            state=A.RUNNING.value, pid=conts[0]["pid"], started_at=alloc["started_at"] or now()))


def touch(m: Master, agent_id: str) -> None:
    with m.db.begin() as conn:
        n = conn.execute(
            t.agents.update().where(t.agents.c.id == agent_id).values(last_seen=now(), connected=True)
        ).rowcount
    if not n:
        raise InvalidRequest(f"agent {agent_id} is not registered; register it first")


def pending_actions(m: Master, agent_id: str, known: set[str] = frozenset()) -> dict:
    with m.db.begin() as conn:
        start, kill = [], []
        for c in containers.on_agent(conn, agent_id):
            alloc = Master.get_row(conn, t.allocations, c["allocation_id"], "allocation")
            if alloc["kill_requested"] or c["state"] == containers.KILLING:
                if not _kill_sent(m, alloc["id"], agent_id):
                    kill.append(alloc["id"])
            elif c["state"] == A.ASSIGNED.value and alloc["id"] not in known:
                start.append(start_order(m, conn, alloc, c))
    return {"start": start, "kill": kill}


def _kill_sent(m: Master, allocation_id: str, agent_id: str) -> bool:
    """Each kill order goes out once per master process and agent; a re-registering agent gets them again."""
    key = f"{allocation_id}@{agent_id}"
    if key in m.kills_sent:
        return True
    m.kills_sent.add(key)
    return False


def start_order(m: Master, conn, alloc, container: dict | None = None) -> dict:
    """Everything an agent needs to launch one container of a run: identity, token, env and the info file."""
    if container is None:
        container = containers.of_allocation(conn, alloc["id"])[0]
    if alloc["trial_id"] is None:
        return commands.start_order(m, conn, alloc, container)
    order = _trial_order(m, conn, alloc, container)
    env, info = containers.env_for(conn, alloc, container)
    order["env"].update(env)
    order["info"].update(info)
    return order


def _trial_order(m: Master, conn, alloc, container: dict) -> dict:
    trial = Master.get_row(conn, t.trials, alloc["trial_id"], "trial")
    exp = Master.get_row(conn, t.experiments, trial["experiment_id"], "experiment")
    config = exp["config"]
    latest = trials.latest_checkpoint(conn, trial["id"])
    token = m.allocation_token(alloc["id"])
    steps = int(latest["steps_completed"]) if latest else 0
    info = {
        "master_url": m.settings.url,
        "cluster_id": m.cluster_id,
        "agent_id": container["agent_id"],
        "slot_ids": list(container["slot_ids"] or []),
        "task_id": f"trial-{trial['id']}",
        "allocation_id": alloc["id"],
        "session_token": token,
        "task_type": "TRIAL",
        "latest_checkpoint": latest["uuid"] if latest else None,
        "trial": {
            "trial_id": trial["id"],
            "experiment_id": exp["id"],
            "trial_run_id": alloc["run_id"],
            "trial_seed": trial["seed"],
            "hparams": trial["hparams"],
            "config": config,
            "steps_completed": steps,
            "target_length": trial["target_length"],
        },
    }
    env = base_env(m, alloc, token, exp["owner"], f"trial-{trial['id']}", "TRIAL", container)
    env.update({
        "STALWART_TRIAL_ID": str(trial["id"]),
        "STALWART_EXPERIMENT_ID": str(exp["id"]),
        "STALWART_TRIAL_RUN_ID": str(alloc["run_id"]),
        "DET_EXPERIMENT_ID": str(exp["id"]),
        "DET_TRIAL_ID": str(trial["id"]),
        "DET_TRIAL_RUN_ID": str(alloc["run_id"]),
        "DET_TRIAL_SEED": str(trial["seed"]),
        "DET_HPARAMS": json.dumps(trial["hparams"]),
        "DET_EXPERIMENT_CONFIG": json.dumps(config),
        "DET_STEPS_COMPLETED": str(steps),
    })
    if latest:
        env["DET_LATEST_CHECKPOINT"] = latest["uuid"]
    env.update(views.environment_variables(config, "cpu"))
    return {
        "allocation_id": alloc["id"],
        "trial_id": trial["id"],
        "slot_ids": list(container["slot_ids"] or []),
        "entrypoint": config["entrypoint"],
        "env": env,
        "info": info,
    }


def base_env(m: Master, alloc, token: str, owner: str, task_id: str, task_type: str, container: dict) -> dict:
    """The environment every task container gets: where the master is, who it is, its slots."""
    host, port = _host_port(m.settings.url)
    return {
        "STALWART_MASTER": m.settings.url,
        "STALWART_ALLOCATION_ID": alloc["id"],
        "STALWART_ALLOCATION_TOKEN": token,
        "DET_MASTER": m.settings.url,
        "DET_MASTER_HOST": host,
        "DET_MASTER_IP": host,
        "DET_MASTER_PORT": port,
        "DET_USE_TLS": "true" if m.settings.url.startswith("https") else "false",
        "DET_USER": owner,
        "DET_RESOURCES_ID": alloc["id"],
        "DET_CONTAINER_ID": alloc["id"],
        "DET_CLUSTER_ID": m.cluster_id,
        "DET_TASK_TYPE": task_type,
        "DET_TASK_ID": task_id,
        "DET_ALLOCATION_ID": alloc["id"],
        "DET_SESSION_TOKEN": token,
        "DET_AGENT_ID": str(container["agent_id"]),
        "DET_SLOT_IDS": json.dumps(list(container["slot_ids"] or [])),
        "DET_SLOT_TYPE": "cpu",
        "DET_RESOURCES_TYPE": "local-process",
    }


def _host_port(url: str) -> tuple[str, str]:
    parsed = urllib.parse.urlsplit(url)
    return parsed.hostname or "", str(parsed.port or (443 if parsed.scheme == "https" else 80))


def _container(conn, agent_id: str, allocation_id: str) -> dict:
    for c in containers.of_allocation(conn, allocation_id):
        if c["agent_id"] == agent_id:
            return c
    raise InvalidRequest(f"allocation {allocation_id} is not assigned to agent {agent_id}")


def mark_started(m: Master, agent_id: str, allocation_id: str, pid: int | None) -> dict:
    with m.db.begin() as conn:
        alloc = Master.get_row(conn, t.allocations, allocation_id, "allocation")
        c = _container(conn, agent_id, allocation_id)
        if alloc["state"] == A.TERMINATED.value or alloc["kill_requested"] or c["state"] == containers.KILLING:
            return {"kill": True}
        _container_started(conn, allocation_id, agent_id, pid)
    return {"kill": False}


def mark_exited(m: Master, agent_id: str, allocation_id: str, exit_code: int | None, agent_lost: bool = False) -> None:
    """A container ended. A failed one takes the rest of its gang down; the allocation ends with the last
    container, with the first failure's exit code (so a gang failure counts as one failure).

    `agent_lost`: the agent killed it itself, having lost the master for too long (fencing); that ends the
    allocation as a lost agent does, without counting a failure."""
    with m.db.begin() as conn:
        alloc = Master.get_row(conn, t.allocations, allocation_id, "allocation")
        _container(conn, agent_id, allocation_id)
        if agent_lost:
            containers.set_state(conn, allocation_id, agent_id, A.TERMINATED.value)
            if alloc["state"] != A.TERMINATED.value:
                containers.kill_others(m, conn, allocation_id, agent_id)
                trials.allocation_exited(m, conn, allocation_id, None, ExitReason.AGENT_LOST)
            return
        containers.set_state(conn, allocation_id, agent_id, A.TERMINATED.value, exit_code=exit_code)
        if alloc["state"] == A.TERMINATED.value:
            return
        first_failure = alloc["exit_code"]
        if exit_code != 0 and first_failure is None:
            first_failure = exit_code
            conn.execute(t.allocations.update().where(t.allocations.c.id == allocation_id)
                         .values(exit_code=exit_code))
        live = [c for c in containers.of_allocation(conn, allocation_id) if c["state"] != A.TERMINATED.value]
        if live:
            if exit_code != 0:
                containers.kill_others(m, conn, allocation_id, agent_id)
            return
        final = first_failure if first_failure is not None else exit_code
        trials.allocation_exited(m, conn, allocation_id, final, ExitReason.EXITED)


def set_enabled(m: Master, agent_id: str, enabled: bool, drain: bool = False) -> dict:
    """Enable an agent, or disable it: with `drain` its tasks finish and nothing new starts there;
    without, its trials are preempted (they checkpoint and resume elsewhere) and its commands killed."""
    from stalwart.master.experiments import experiments

    with m.db.begin() as conn:
        Master.get_row(conn, t.agents, agent_id, "agent")
        conn.execute(t.agents.update().where(t.agents.c.id == agent_id).values(
            enabled=enabled, draining=bool(drain) and not enabled))
        if not enabled and not drain:
            for c in containers.on_agent(conn, agent_id):
                alloc = Master.get_row(conn, t.allocations, c["allocation_id"], "allocation")
                if alloc["state"] == A.TERMINATED.value:
                    continue
                if alloc["command_id"] is not None:
                    experiments.request_kill(m, conn, alloc)
                else:
                    experiments.request_preemption(m, conn, alloc["id"])
        row = Master.get_row(conn, t.agents, agent_id, "agent")
        used = containers.used_slots(conn)
    m.wake_scheduler()
    return mviews.agent(row, len(used.get(agent_id, ())))
