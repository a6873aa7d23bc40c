"""Allocations run as an engine's jobs (Slurm): their job ids, join credentials and one-shot agents (migration 0012).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from stalwart.api.states import AllocationState as A
from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_ALLOC = t.allocations.c
_AGENT = t.agents.c


def set_submitted(conn: Conn, allocation_id: str, job_id: str, join_token_hash: str) -> None:
    """The allocation's job was submitted: its engine id and the hash of the job's join credential."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id)
                 .values(engine_job_id=job_id, join_token_hash=join_token_hash, engine_started_at=None))


def clear_submitted(conn: Conn, allocation_id: str) -> None:
    """The allocation's job is gone before it ran (its pods deleted): it is submitted again."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id)
                 .values(engine_job_id=None, join_token_hash=None, engine_started_at=None))


def submitted(conn: Conn, allocation_ids: Iterable[str]) -> set[str]:
    """Those of `allocation_ids` that have a job."""
    ids = list(allocation_ids)
    if not ids:
        return set()
    return set(conn.execute(sa.select(_ALLOC.id).where(_ALLOC.id.in_(ids), _ALLOC.engine_job_id.is_not(None)))
               .scalars())


def set_pending_reasons(conn: Conn, reasons: dict[str, str]) -> None:
    """Allocation id -> why it waits (the engine's words), all in one statement."""
    if reasons:
        conn.execute(t.allocations.update().where(_ALLOC.id == sa.bindparam("aid"))
                     .values(pending_reason=sa.bindparam("reason")),
                     [{"aid": aid, "reason": reason} for aid, reason in reasons.items()])


def set_started(conn: Conn, allocation_id: str, at: float) -> None:
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(engine_started_at=at))


def close_join(conn: Conn, allocation_id: str) -> None:
    """No agent may enroll with the job's join credential any more."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(join_token_hash=None))


def by_join_hash(conn: Conn, token_hash: str) -> Row | None:
    """The live allocation whose job's join credential has this hash."""
    return conn.execute(sa.select(t.allocations).where(
        _ALLOC.join_token_hash == token_hash, _ALLOC.state != A.TERMINATED.value)).mappings().first()


def with_jobs(conn: Conn, allocation_ids: Iterable[str] | None = None) -> list[Row]:
    """Allocations that have a job: all live ones, or those of `allocation_ids` whatever their state."""
    q = sa.select(t.allocations).where(_ALLOC.engine_job_id.is_not(None))
    q = q.where(_ALLOC.state != A.TERMINATED.value) if allocation_ids is None else q.where(
        _ALLOC.id.in_(list(allocation_ids)))
    return list(conn.execute(q).mappings().all())


def one_shot_agents(conn: Conn, allocation_id: str) -> list[Row]:
    return list(conn.execute(sa.select(t.agents).where(_AGENT.allocation_id == allocation_id)
                             .order_by(_AGENT.id)).mappings().all())


def remove_ended_one_shot_agents(conn: Conn) -> list[str]:
    """The one-shot agents whose allocation has ended are removed with their credentials; their ids."""
    ended = sa.select(_ALLOC.id).where(_ALLOC.state == A.TERMINATED.value)
    ids = list(conn.execute(sa.select(_AGENT.id).where(_AGENT.allocation_id.in_(ended))).scalars())
    if ids:
        conn.execute(t.agent_credentials.delete().where(t.agent_credentials.c.agent_id.in_(ids)))
        conn.execute(t.agents.delete().where(_AGENT.id.in_(ids)))
    return ids


def owner_of(conn: Conn, allocation_id: str) -> dict[str, Any]:
    """Whose run this is: `owner`, `project_id` and `config` of its experiment (a trial's run) or command."""
    a, tr, e, c = t.allocations.c, t.trials.c, t.experiments.c, t.commands.c
    q = (sa.select(sa.func.coalesce(e.owner, c.owner).label("owner"),
                   sa.func.coalesce(e.project_id, c.project_id).label("project_id"),
                   e.config.label("exp_config"), c.config.label("cmd_config"))
         .select_from(t.allocations.outerjoin(t.trials, tr.id == a.trial_id)
                      .outerjoin(t.experiments, e.id == tr.experiment_id)
                      .outerjoin(t.commands, c.id == a.command_id))
         .where(a.id == allocation_id))
    row = conn.execute(q).mappings().one()
    return {"owner": row["owner"], "project_id": row["project_id"],
            "config": row["exp_config"] if row["exp_config"] is not None else row["cmd_config"] or {}}
