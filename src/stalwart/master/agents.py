"""Agent sessions: registration and reconciliation, the action long-poll, and what a start order holds."""

from __future__ import annotations

import json
import urllib.parse

import sqlalchemy as sa

from stalwart.api.errors import InvalidRequest
from stalwart.api.states import AllocationState as A, ExitReason
from stalwart.config import views
from stalwart.db import tables as t
from stalwart.master import trials
from stalwart.master.service import Master, now


def register(m: Master, body: dict) -> dict:
    """Create or refresh an agent; reconcile the allocations it says it runs with ours."""
    agent_id = str(body.get("agent_id") or "").strip()
    if not agent_id:
        raise InvalidRequest("agent_id: required")
    slots = body.get("slots")
    if not isinstance(slots, int) or slots < 0:
        raise InvalidRequest(f"slots: expected an integer >= 0, got {slots!r}")
    running = set(body.get("running_allocations") or [])
    values = dict(
        hostname=str(body.get("hostname") or ""),
        resource_pool=str(body.get("resource_pool") or "default"),
        slots=slots,
        slot_type=str(body.get("slot_type") or "cpu"),
        connected=True,
        last_seen=now(),
    )
    with m.db.begin() as conn:
        exists = conn.execute(sa.select(t.agents.c.id).where(t.agents.c.id == agent_id)).first()
        if exists:
            conn.execute(t.agents.update().where(t.agents.c.id == agent_id).values(**values))
        else:
            conn.execute(t.agents.insert().values(id=agent_id, enabled=True, registered_at=now(), **values))
        ours = conn.execute(
            sa.select(t.allocations.c.id, t.allocations.c.state).where(
                t.allocations.c.agent_id == agent_id, t.allocations.c.state != A.TERMINATED.value
            )
        ).all()
        for alloc_id, state in ours:
            if state == A.RUNNING.value and alloc_id not in running:
                trials.allocation_exited(m, conn, alloc_id, None, ExitReason.AGENT_LOST)
            elif state == A.ASSIGNED.value and alloc_id in running:
                conn.execute(t.allocations.update().where(t.allocations.c.id == alloc_id)
                             .values(state=A.RUNNING.value, started_at=now()))
        live = {a for a, _ in ours}
        stale = [a for a in running if a not in live]
    m.wake_scheduler()
    return {"agent_id": agent_id, "kill": stale, "cluster_id": m.cluster_id}


def touch(m: Master, agent_id: str) -> None:
    with m.db.begin() as conn:
        n = conn.execute(
            t.agents.update().where(t.agents.c.id == agent_id).values(last_seen=now(), connected=True)
        ).rowcount
    if not n:
        raise InvalidRequest(f"agent {agent_id} is not registered; register it first")


def pending_actions(m: Master, agent_id: str, known: set[str] = frozenset()) -> dict:
    with m.db.begin() as conn:
        rows = conn.execute(
            sa.select(t.allocations).where(
                t.allocations.c.agent_id == agent_id, t.allocations.c.state != A.TERMINATED.value
            )
        ).mappings().all()
        start = [start_order(m, conn, r) for r in rows
                 if r["state"] == A.ASSIGNED.value and not r["kill_requested"] and r["id"] not in known]
        kill = [r["id"] for r in rows if r["kill_requested"] and not _kill_sent(m, r["id"])]
    return {"start": start, "kill": kill}


def _kill_sent(m: Master, allocation_id: str) -> bool:
    """Each kill order goes out once per master process; a re-registering agent gets them again."""
    if allocation_id in m.kills_sent:
        return True
    m.kills_sent.add(allocation_id)
    return False


def start_order(m: Master, conn, alloc) -> dict:
    """Everything an agent needs to launch one trial run: identity, token, env and the info file."""
    trial = Master.get_row(conn, t.trials, alloc["trial_id"], "trial")
    exp = Master.get_row(conn, t.experiments, trial["experiment_id"], "experiment")
    config = exp["config"]
    latest = trials.latest_checkpoint(conn, trial["id"])
    token = m.allocation_token(alloc["id"])
    steps = int(latest["steps_completed"]) if latest else 0
    info = {
        "master_url": m.settings.url,
        "cluster_id": m.cluster_id,
        "agent_id": alloc["agent_id"],
        "slot_ids": list(alloc["slot_ids"] or []),
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
    env = {
        "STALWART_MASTER": m.settings.url,
        "STALWART_ALLOCATION_ID": alloc["id"],
        "STALWART_ALLOCATION_TOKEN": token,
        "STALWART_TRIAL_ID": str(trial["id"]),
        "STALWART_EXPERIMENT_ID": str(exp["id"]),
        "STALWART_TRIAL_RUN_ID": str(alloc["run_id"]),
        "DET_MASTER": m.settings.url,
        "DET_MASTER_HOST": _host_port(m.settings.url)[0],
        "DET_MASTER_IP": _host_port(m.settings.url)[0],
        "DET_MASTER_PORT": _host_port(m.settings.url)[1],
        "DET_USE_TLS": "true" if m.settings.url.startswith("https") else "false",
        "DET_USER": exp["owner"],
        "DET_RESOURCES_ID": alloc["id"],
        "DET_CONTAINER_ID": alloc["id"],
        "DET_CLUSTER_ID": m.cluster_id,
        "DET_EXPERIMENT_ID": str(exp["id"]),
        "DET_TRIAL_ID": str(trial["id"]),
        "DET_TRIAL_RUN_ID": str(alloc["run_id"]),
        "DET_TRIAL_SEED": str(trial["seed"]),
        "DET_TASK_TYPE": "TRIAL",
        "DET_TASK_ID": f"trial-{trial['id']}",
        "DET_ALLOCATION_ID": alloc["id"],
        "DET_SESSION_TOKEN": token,
        "DET_AGENT_ID": str(alloc["agent_id"]),
        "DET_SLOT_IDS": json.dumps(list(alloc["slot_ids"] or [])),
        "DET_SLOT_TYPE": "cpu",
        "DET_RESOURCES_TYPE": "local-process",
        "DET_HPARAMS": json.dumps(trial["hparams"]),
        "DET_EXPERIMENT_CONFIG": json.dumps(config),
        "DET_STEPS_COMPLETED": str(steps),
    }
    if latest:
        env["DET_LATEST_CHECKPOINT"] = latest["uuid"]
    env.update(views.environment_variables(config, "cpu"))
    return {
        "allocation_id": alloc["id"],
        "trial_id": trial["id"],
        "slot_ids": list(alloc["slot_ids"] or []),
        "entrypoint": config["entrypoint"],
        "env": env,
        "info": info,
    }


def _host_port(url: str) -> tuple[str, str]:
    parsed = urllib.parse.urlsplit(url)
    return parsed.hostname or "", str(parsed.port or (443 if parsed.scheme == "https" else 80))


def mark_started(m: Master, agent_id: str, allocation_id: str, pid: int | None) -> dict:
    with m.db.begin() as conn:
        alloc = Master.get_row(conn, t.allocations, allocation_id, "allocation")
        if alloc["agent_id"] != agent_id:
            raise InvalidRequest(f"allocation {allocation_id} is not assigned to agent {agent_id}")
        if alloc["state"] == A.TERMINATED.value or alloc["kill_requested"]:
            return {"kill": True}
        conn.execute(
            t.allocations.update()
            .where(t.allocations.c.id == allocation_id)
            .values(state=A.RUNNING.value, pid=pid, started_at=alloc["started_at"] or now())
        )
    return {"kill": False}


def mark_exited(m: Master, agent_id: str, allocation_id: str, exit_code: int | None) -> None:
    with m.db.begin() as conn:
        alloc = Master.get_row(conn, t.allocations, allocation_id, "allocation")
        if alloc["agent_id"] != agent_id:
            raise InvalidRequest(f"allocation {allocation_id} is not assigned to agent {agent_id}")
        trials.allocation_exited(m, conn, allocation_id, exit_code, ExitReason.EXITED)
