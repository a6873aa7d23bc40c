"""What the metrics index (master/series/index.py) reads: the trials' state and runs, the metrics table's top id,
and every numeric metric value of the metrics table's rows, in row id order."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn

MetricRow = sa.Row[int, int, str, int, float, str, float]
"""(metrics id, trial, group, steps, report time, name, value) of one numeric metric."""

_T = t.trials.c


def trials_after(conn: Conn, after_id: int | None = None) -> list[tuple[int, int, int, str]]:
    """(id, experiment_id, runs, state) of every trial in id order; with `after_id`, of those with a larger id."""
    q = sa.select(_T.id, _T.experiment_id, _T.runs, _T.state)
    if after_id is not None:
        q = q.where(_T.id > after_id)
    return [(tid, exp_id, runs, state) for tid, exp_id, runs, state in conn.execute(q.order_by(_T.id))]


def runs_and_states(conn: Conn, trial_ids: list[int]) -> list[tuple[int, int, str]]:
    """(id, runs, state) of these trials."""
    rows = conn.execute(sa.select(_T.id, _T.runs, _T.state).where(_T.id.in_(trial_ids))).all()
    return [(tid, runs, state) for tid, runs, state in rows]


def top_metrics_id(conn: Conn) -> int:
    """The largest id of the metrics table (0 when it is empty)."""
    top: int | None = conn.execute(sa.select(sa.func.max(t.metrics.c.id))).scalar()
    return top or 0


def numbers_between(conn: Conn, lo_id: int, hi_id: int) -> Sequence[MetricRow]:
    """Every numeric metric of the metrics rows with ids in (lo_id, hi_id], in id order."""
    return _numbers(conn, "m.id > :lo AND m.id <= :hi", {"lo": lo_id, "hi": hi_id})


def numbers_of_trial(conn: Conn, trial_id: int, upto_id: int) -> Sequence[MetricRow]:
    """Every numeric metric of one trial's metrics rows with ids up to `upto_id`, in id order."""
    return _numbers(conn, "m.trial_id = :tid AND m.id <= :hwm", {"tid": trial_id, "hwm": upto_id})


def _numbers(conn: Conn, where: str, params: dict[str, int]) -> Sequence[MetricRow]:
    """(metrics id, trial, group, steps, report time, name, value) of every numeric metric, in id order."""
    if conn.dialect.name == "postgresql":
        sql = ("SELECT m.id, m.trial_id, m.group_name, m.steps_completed, m.report_time, j.key, "
               "(j.value #>> '{}')::float8 FROM metrics m, jsonb_each(m.metrics) j "
               f"WHERE {where} AND jsonb_typeof(j.value) = 'number' ORDER BY m.id")
    else:
        sql = ("SELECT m.id, m.trial_id, m.group_name, m.steps_completed, m.report_time, j.key, j.value "
               f"FROM metrics m, json_each(m.metrics) j WHERE {where} AND j.type IN ('integer', 'real') "
               "ORDER BY m.id")
    rows: Sequence[MetricRow] = conn.execute(sa.text(sql), params).all()
    return rows
