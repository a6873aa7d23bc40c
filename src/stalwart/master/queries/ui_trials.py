"""The web UI's reads of a trial: its progress and metric names read from the metrics table (while the metrics
index builds), the validations at its checkpoints, and the tail of its logs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.metrics import metric_names
from stalwart.master.queries.rows import Conn, Row

_M = t.metrics.c
_L = t.task_logs.c


class TrialStats(TypedDict):
    """A trial's progress as the metrics table tells it by two index seeks: steps completed and the latest
    validation of the searcher metric; its best validation and how many there are stay unknown (None)."""

    steps_completed: int
    best_validation: None
    latest_validation: dict[str, Any] | None
    validations: None


def trial_stats(conn: Conn, trial_id: int, metric: str | None) -> TrialStats:
    """Steps completed and the latest validation of `metric` of one trial (its newest training and validation
    reports)."""
    out: TrialStats = {"steps_completed": 0, "best_validation": None, "latest_validation": None, "validations": None}
    for group in ("training", "validation"):
        row = conn.execute(sa.select(_M.steps_completed, _M.metrics)
                           .where(_M.trial_id == trial_id, _M.group_name == group)
                           .order_by(_M.steps_completed.desc()).limit(1)).first()
        if row is None:
            continue
        out["steps_completed"] = max(out["steps_completed"], row[0])
        if group == "validation" and metric and isinstance(row[1], dict) and metric in row[1]:
            out["latest_validation"] = {"value": row[1][metric], "steps_completed": row[0]}
    return out


def metric_names_by_group(conn: Conn, trial_id: int) -> dict[str, list[str]]:
    """{group: its numeric metric names} of every group a trial reported in, by group name."""
    groups = [g for (g,) in conn.execute(sa.select(_M.group_name).where(_M.trial_id == trial_id).distinct())]
    return {g: metric_names(conn, trial_id, g) for g in sorted(groups)}


def validations_at(conn: Conn, trial_id: int, steps: Sequence[int]) -> dict[int, Any]:
    """{steps completed: the metrics of the trial's validation there} at each of `steps` that has one."""
    if not steps:
        return {}
    rows = conn.execute(sa.select(_M.steps_completed, _M.metrics).where(
        _M.trial_id == trial_id, _M.group_name == "validation", _M.steps_completed.in_(steps)))
    return {int(at): metrics for at, metrics in rows}


def log_tail(conn: Conn, trial_id: int, *, levels: Sequence[str] = (), text: str = "", limit: int) -> list[Row]:
    """The newest `limit` log lines of a trial, newest first: only those at one of `levels` (when given) holding
    `text` (any case, when given)."""
    where = [_L.trial_id == trial_id]
    if levels:
        where.append(_L.level.in_(levels))
    if text:
        like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append(_L.log.ilike(like, escape="\\"))  # case-insensitive on SQLite and PostgreSQL alike
    return list(conn.execute(sa.select(t.task_logs).where(*where).order_by(_L.id.desc()).limit(limit))
                .mappings().all())


def last_log_id(conn: Conn, trial_id: int) -> int:
    """The id of a trial's newest log line (0: none yet)."""
    return int(conn.execute(sa.select(sa.func.max(_L.id)).where(_L.trial_id == trial_id)).scalar() or 0)
