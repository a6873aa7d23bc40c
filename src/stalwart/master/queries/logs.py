"""Reads and writes of the task_logs table: bulk inserts of checked rows, and a trial's lines in id order."""

from __future__ import annotations

from collections.abc import Sequence
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


def of_trial(conn: Conn, trial_id: int, after_id: int, limit: int) -> list[dict[str, Any]]:
    """A trial's stored lines after `after_id`, oldest first, at most `limit` (plain rows zipped with the column
    names: a million lines read back in seconds)."""
    q = (
        sa.select(t.task_logs)
        .where(t.task_logs.c.trial_id == trial_id, t.task_logs.c.id > after_id)
        .order_by(t.task_logs.c.id)
        .limit(limit)
    )
    keys = _READ_KEYS
    return [dict(zip(keys, row, strict=True)) for row in conn.execute(q).all()]
