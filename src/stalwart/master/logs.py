"""Storing log lines (bulk inserts of checked batches), the master's own lines in a trial's log, reading them."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.db.engine import Database
from stalwart.master.log_rows import COLUMNS, Row, body_rows, log_rows
from stalwart.master.service import now


def insert_rows(conn: sa.Connection, rows: list[Row]) -> int:
    """Insert rows (from `log_rows`), in order, in the caller's transaction: PostgreSQL, one COPY; SQLite, one
    executemany of plain tuples (no per-row SQLAlchemy work). Returns how many."""
    if not rows:
        return 0
    if conn.dialect.name == "postgresql":
        cur = conn.connection.cursor()
        try:
            with cur.copy(f"COPY task_logs ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        finally:
            cur.close()
    elif conn.dialect.paramstyle == "qmark":
        conn.exec_driver_sql(
            f"INSERT INTO task_logs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", rows)
    else:
        conn.execute(t.task_logs.insert(), [dict(zip(COLUMNS, row, strict=True)) for row in rows])
    return len(rows)


def insert_logs(conn: sa.Connection, entries: list[dict[str, Any]]) -> int:
    """Check and insert a batch of log entries in the caller's transaction; return how many were stored."""
    return insert_rows(conn, log_rows(entries, now()))


def store_rows(db: Database, rows: list[Row], allocation_id: str | None = None) -> int:
    """Store checked rows (`log_rows` / `body_rows`) in one transaction of their own. With `allocation_id` (a
    trial posting its own lines) every line is filed under that allocation and its trial."""
    with db.begin() as conn:
        if allocation_id is not None:
            trial_id = conn.execute(
                sa.select(t.allocations.c.trial_id).where(t.allocations.c.id == allocation_id)).scalar()
            rows = [(trial_id, allocation_id, *row[2:]) for row in rows]
        return insert_rows(conn, rows)


def store_batch(db: Database, data: dict[str, Any], allocation_id: str | None = None) -> int:
    """Check and store the lines of one POST to /task/logs (`body_rows`) in one transaction."""
    return store_rows(db, body_rows(data, now()), allocation_id)


def master_line(conn: sa.Connection, trial_id: int, text: str, level: str = "INFO",
                allocation_id: str | None = None) -> None:
    """A line the master itself adds to a trial's log (restarts, preemptions, errors)."""
    insert_logs(
        conn,
        [{"trial_id": trial_id, "allocation_id": allocation_id, "log": text, "level": level, "source": "master",
          "stdtype": "stdout"}],
    )


def read_logs(conn: sa.Connection, trial_id: int, after_id: int, limit: int = 5000) -> list[dict[str, Any]]:
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


_READ_KEYS = tuple(c.name for c in t.task_logs.columns)
