"""The job queue: every experiment and command is a job with a priority, weight, pool and queue position.

The scheduling pass reads these rows every time, so a change here takes effect on the next pass
(callers wake the scheduler). Queue order is (priority, queue_position, submitted_at)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError, InvalidRequest, NotFoundError
from stalwart.api.states import AllocationState as A
from stalwart.config.sections import MAX_SLOTS
from stalwart.master.queries import (
    allocations as allocation_rows,
    commands as command_rows,
    experiments as experiment_rows,
    jobs as job_rows,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, new_id, now

EXPERIMENT, COMMAND = job_rows.EXPERIMENT, job_rows.COMMAND


def resolve_pool(m: Master, requested: str | None, slots: int, field: str = "resources.resource_pool") -> str:
    """The pool a new task runs in: the one asked for, else the default compute (or aux, for 0 slots) pool."""
    cluster = m.settings.cluster
    pool = requested or (cluster.default_aux_pool if slots == 0 else cluster.default_compute_pool)
    if cluster.pool(pool) is None:
        raise ConfigError(f"{field}: unknown resource pool {pool!r}; this cluster's pools are: "
                          f"{', '.join(cluster.pool_names)}")
    return pool


def create_job(m: Master, conn: Conn, kind: str, entity_id: int, resources: Mapping[str, Any], pool: str) -> str:
    top = job_rows.last_queue_position(conn)
    priority = resources.get("priority")
    weight = resources.get("weight")
    job_id = new_id()
    job_rows.insert(
        conn, job_id, kind=kind, entity_id=entity_id,
        priority=int(priority) if priority is not None else m.settings.pool_scheduler(pool).default_priority,
        weight=float(weight) if weight is not None else 1.0, max_slots=resources.get("max_slots"),
        resource_pool=pool, queue_position=top + 1.0, submitted_at=now(),
    )
    return job_id


def job_of(conn: Conn, kind: str, entity_id: int) -> Row:
    row = job_rows.of_entity(conn, kind, entity_id)
    if row is None:
        raise NotFoundError(f"{kind.lower()} {entity_id} has no job in the queue")
    return row


def _active_entities(conn: Conn) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
    return experiment_rows.live_names(conn), command_rows.names(conn, "ACTIVE")


def _allocation_slots(conn: Conn) -> dict[tuple[str, int], list[tuple[str, int, bool, str | None]]]:
    """(job type, entity id) → live allocations' (state, slots, backfilled, pending reason)."""
    out: dict[tuple[str, int], list[tuple[str, int, bool, str | None]]] = {}
    for r in allocation_rows.live_with_experiment(conn):
        key = (COMMAND, r["command_id"]) if r["command_id"] is not None else (EXPERIMENT, r["experiment_id"])
        out.setdefault(key, []).append((r["state"], r["slots"], r["backfilled"], r["pending_reason"]))
    return out


def list_jobs(m: Master, pool: str | None = None) -> list[dict[str, Any]]:
    """Jobs of live experiments and commands, in queue order, positions numbered from 1."""
    with m.db.begin() as conn:
        exps, cmds = _active_entities(conn)
        allocs = _allocation_slots(conn)
        rows = job_rows.in_queue_order(conn)
    out: list[dict[str, Any]] = []
    for row in rows:
        entity = (exps if row["type"] == EXPERIMENT else cmds).get(row["entity_id"])
        if entity is None or (pool and row["resource_pool"] != pool):
            continue
        live = allocs.get((row["type"], row["entity_id"]), [])
        held = [a for a in live if a[0] in (A.ASSIGNED.value, A.RUNNING.value)]
        state = "QUEUED" if not held else "SCHEDULED_BACKFILLED" if any(a[2] for a in held) else "SCHEDULED"
        out.append({
            "job_id": row["id"], "type": row["type"], "entity_id": row["entity_id"],
            "task_kind": entity.get("kind") if row["type"] == COMMAND else None,
            "name": entity.get("name") or entity.get("description") or "", "owner": entity["owner"],
            "workspace_id": entity["workspace_id"],
            "state": state, "priority": row["priority"], "weight": row["weight"], "max_slots": row["max_slots"],
            "queue_position": len(out) + 1, "resource_pool": row["resource_pool"],
            "slots_requested": sum(a[1] for a in live), "slots_allocated": sum(a[1] for a in held),
            "submitted_at": row["submitted_at"],
            "reason": next((a[3] for a in live if a[3]), None),
        })
    return out


def get_job(m: Master, job_id: str) -> dict[str, Any]:
    for job in list_jobs(m):
        if job["job_id"] == job_id:
            return job
    raise NotFoundError(f"job {job_id} not found (or no longer in the queue); see `stalwart job list`")


def _row(conn: Conn, job_id: str) -> Row:
    row = job_rows.find(conn, job_id)
    if row is None:
        raise NotFoundError(f"job {job_id} not found; see `stalwart job list`")
    return row


def check_priority(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 99:
        raise InvalidRequest(f"priority: expected an integer from 1 (most urgent) to 99, got {value!r}")
    return value


def check_weight(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise InvalidRequest(f"weight: expected a number > 0, got {value!r}")
    return float(value)


def check_max_slots(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SLOTS:
        raise InvalidRequest(f"max_slots: expected an integer in 0..{MAX_SLOTS} (or null for no cap), got {value!r}")
    return value


def update_job(m: Master, job_id: str, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Change priority / weight / max_slots / resource_pool; unknown keys are refused."""
    allowed = {"priority", "weight", "max_slots", "resource_pool"}
    unknown = sorted(set(changes) - allowed)
    if unknown:
        raise InvalidRequest(f"cannot update {', '.join(unknown)}; a job update takes {', '.join(sorted(allowed))}")
    values: dict[str, Any] = {}
    if "priority" in changes:
        values["priority"] = check_priority(changes["priority"])
    if "weight" in changes:
        values["weight"] = check_weight(changes["weight"])
    if "max_slots" in changes:
        values["max_slots"] = check_max_slots(changes["max_slots"])
    if "resource_pool" in changes:
        pool = changes["resource_pool"]
        if not isinstance(pool, str) or not pool:
            raise InvalidRequest(f"resource_pool: expected a pool name, got {pool!r}")
        values["resource_pool"] = resolve_pool(m, pool, 1, "resource_pool")
    with m.db.begin() as conn:
        _row(conn, job_id)
        if values:
            job_rows.update(conn, job_id, values)
    m.wake_scheduler()
    return get_job(m, job_id)


def move_job(m: Master, job_id: str, ahead_of: str | None = None, behind_of: str | None = None) -> list[dict[str, Any]]:
    """Put a job just ahead of / behind another job of the same priority."""
    if (ahead_of is None) == (behind_of is None):
        raise InvalidRequest("give exactly one of ahead_of or behind_of (a job id)")
    anchor_id = ahead_of if ahead_of is not None else behind_of
    if not anchor_id:
        raise InvalidRequest("ahead_of / behind_of: expected a job id")
    if anchor_id == job_id:
        raise InvalidRequest("a job cannot move relative to itself")
    with m.db.begin() as conn:
        job, anchor = _row(conn, job_id), _row(conn, anchor_id)
        if job["priority"] != anchor["priority"]:
            raise InvalidRequest(
                f"job {job_id} has priority {job['priority']} and job {anchor_id} has priority {anchor['priority']}; "
                "the queue is ordered by priority first, so change the priority instead (or as well)")
        same = job_rows.others_of_priority(conn, job["priority"], job_id)
        idx = [other_id for other_id, _ in same].index(anchor_id)
        if ahead_of:
            before = same[idx - 1][1] if idx > 0 else anchor["queue_position"] - 2.0
            position = (before + anchor["queue_position"]) / 2
        else:
            after = same[idx + 1][1] if idx + 1 < len(same) else anchor["queue_position"] + 2.0
            position = (after + anchor["queue_position"]) / 2
        job_rows.update(conn, job_id, {"queue_position": position})
    m.wake_scheduler()
    return list_jobs(m)
