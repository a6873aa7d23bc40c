"""Reads and writes of the task_logs table: bulk inserts of checked rows, and a trial's lines in id order
(filtered by level, time and text in SQL)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn

_READ_KEYS = tuple(c.name for c in t.task_logs.columns)


def insert(conn: Conn, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> int:
    """Insert rows (tuples of `columns`), in order, in the caller's transaction: PostgreSQL, one COPY; SQLite, one
    executemany of plain tuples (no per-row SQLAlchemy work). Returns how many."""
    if not rows:
        return 0
    if conn.dialect.name == "postgresql":
        cur = conn.connection.cursor()
        try:
            with cur.copy(f"COPY task_logs ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        finally:
            cur.close()
    elif conn.dialect.paramstyle == "qmark":
        conn.exec_driver_sql(
            f"INSERT INTO task_logs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            rows)
    else:
        conn.execute(t.task_logs.insert(), [dict(zip(columns, row, strict=True)) for row in rows])
    return len(rows)


@dataclass(frozen=True)
class LogFilter:
    """Which lines to read: any of `levels`, at or after `since` (epoch seconds), containing `grep`."""

    levels: tuple[str, ...] = ()
    since: float | None = None
    grep: str | None = None


def _matching(trial_id: int, where: LogFilter | None) -> list[sa.ColumnElement[bool]]:
    c = t.task_logs.c
    conditions: list[sa.ColumnElement[bool]] = [c.trial_id == trial_id]
    if where is not None:
        if where.levels:
            conditions.append(c.level.in_(where.levels))
        if where.since is not None:
            conditions.append(c.timestamp >= where.since)
        if where.grep:
            conditions.append(c.log.contains(where.grep, autoescape=True))
    return conditions


def of_trial(conn: Conn, trial_id: int, after_id: int, limit: int,
             where: LogFilter | None = None) -> list[dict[str, Any]]:
    """A trial's stored lines after `after_id` that match `where`, oldest first, at most `limit` (plain rows zipped
    with the column names: a million lines read back in seconds)."""
    q = (
        sa.select(t.task_logs)
        .where(*_matching(trial_id, where), t.task_logs.c.id > after_id)
        .order_by(t.task_logs.c.id)
        .limit(limit)
    )
    keys = _READ_KEYS
    return [dict(zip(keys, row, strict=True)) for row in conn.execute(q).all()]


def start_of_tail(conn: Conn, trial_id: int, after_id: int, count: int, where: LogFilter | None = None) -> int:
    """The `after_id` from which reading gives only the last `count` matching lines after `after_id`."""
    nth_last = conn.execute(
        sa.select(t.task_logs.c.id)
        .where(*_matching(trial_id, where), t.task_logs.c.id > after_id)
        .order_by(t.task_logs.c.id.desc())
        .offset(count - 1)
        .limit(1)
    ).scalar()
    return after_id if nth_last is None else max(after_id, int(nth_last) - 1)
