"""Reads and writes of what log policies found (`log_policy_matches`, `trials.log_policy_matched`) and of the trials'
experiments' policies and log retention (`experiments.log_retention_days`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_M = t.log_policy_matches.c


def experiments_of(conn: Conn, trial_ids: Iterable[int]) -> dict[int, int]:
    """trial id -> its experiment's id, for the trials that exist."""
    ids = list(set(trial_ids))
    if not ids:
        return {}
    q = sa.select(t.trials.c.id, t.trials.c.experiment_id).where(t.trials.c.id.in_(ids))
    return {int(tid): int(eid) for tid, eid in conn.execute(q).all()}


def policies_of(conn: Conn, exp_id: int) -> list[Any]:
    """The experiment's `log_policies` as stored in its config (the master's defaults already merged in)."""
    config = conn.execute(sa.select(t.experiments.c.config).where(t.experiments.c.id == exp_id)).scalar()
    found = config.get("log_policies") if isinstance(config, dict) else None
    return list(found) if isinstance(found, list) else []


def agents_of(conn: Conn, allocation_ids: Iterable[str]) -> dict[str, str | None]:
    """allocation id -> the agent it was placed on (its chief container's)."""
    ids = list(set(allocation_ids))
    if not ids:
        return {}
    q = sa.select(t.allocations.c.id, t.allocations.c.agent_id).where(t.allocations.c.id.in_(ids))
    return {aid: agent for aid, agent in conn.execute(q).all()}


def record(conn: Conn, values: dict[str, Any]) -> bool:
    """Store a match (trial_id, allocation_id, agent_id, policy_name, pattern, action, log, matched_at) unless this
    run already matched this policy; True when it is new."""
    same = sa.select(_M.id).where(_M.allocation_id == values["allocation_id"], _M.pattern == values["pattern"],
                                  _M.policy_name.is_(None) if values["policy_name"] is None
                                  else _M.policy_name == values["policy_name"])
    if conn.execute(same).first() is not None:
        return False
    with conn.begin_nested():  # another batch of the same run may have stored it a moment ago (PostgreSQL)
        try:
            conn.execute(t.log_policy_matches.insert().values(**values))
        except sa.exc.IntegrityError:
            return False
    return True


def set_matched(conn: Conn, trial_id: int, policy_name: str) -> None:
    """The trial shows `policy_name` as the log policy its logs matched (the last one wins, as in Determined)."""
    conn.execute(t.trials.update().where(t.trials.c.id == trial_id).values(log_policy_matched=policy_name))


def of_trial(conn: Conn, trial_id: int) -> list[Row]:
    """A trial's matches, oldest first."""
    return list(conn.execute(sa.select(t.log_policy_matches).where(_M.trial_id == trial_id).order_by(_M.id))
                .mappings())


def cancel_retries(conn: Conn, trial_id: int) -> list[Row]:
    """The trial's matches of `cancel_retries` policies: any of them means a failed run is not restarted."""
    q = sa.select(t.log_policy_matches).where(_M.trial_id == trial_id, _M.action == "cancel_retries").order_by(_M.id)
    return list(conn.execute(q).mappings())


def excluded_agents(conn: Conn, trial_ids: Iterable[int]) -> dict[int, frozenset[str]]:
    """trial id -> the agents its runs may no longer be placed on (where a line matched an `exclude_node` policy)."""
    ids = list(set(trial_ids))
    if not ids:
        return {}
    q = (sa.select(_M.trial_id, _M.agent_id).distinct()
         .where(_M.trial_id.in_(ids), _M.action == "exclude_node", _M.agent_id.is_not(None)))
    out: dict[int, set[str]] = defaultdict(set)
    for trial_id, agent_id in conn.execute(q).all():
        out[int(trial_id)].add(agent_id)
    return {tid: frozenset(agents) for tid, agents in out.items()}


def set_retention(conn: Conn, exp_id: int, days: int, config: dict[str, Any]) -> None:
    """The experiment keeps its trials' logs `days` days after they end (-1: forever); its config says so too."""
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id)
                 .values(log_retention_days=days, config=config))


def delete_expired_logs(conn: Conn, now: float, master_days: int) -> int:
    """Delete every log line of each ended trial whose retention (its experiment's `log_retention_days`, else
    `master_days`; -1 keeps them forever) ran out: it ended that many days before `now`. How many were deleted."""
    days = sa.func.coalesce(t.experiments.c.log_retention_days, master_days)
    expired = (sa.select(t.trials.c.id)
               .join(t.experiments, t.experiments.c.id == t.trials.c.experiment_id)
               .where(t.trials.c.ended_at.is_not(None), days >= 0,
                      t.trials.c.ended_at <= now - days * 86400.0))
    return int(conn.execute(t.task_logs.delete().where(t.task_logs.c.trial_id.in_(expired.scalar_subquery())))
               .rowcount)
