"""Storing log lines (bulk inserts of checked batches), the master's own lines in a trial's log, reading them."""

from __future__ import annotations

from typing import Any

from stalwart.db.engine import Database
from stalwart.master.log_rows import COLUMNS, Row, body_rows, log_rows
from stalwart.master.queries import logs as log_store, runs
from stalwart.master.queries.logs import LogFilter
from stalwart.master.queries.rows import Conn
from stalwart.master.service import now


def insert_rows(conn: Conn, rows: list[Row]) -> int:
    """Insert rows (from `log_rows`), in order, in the caller's transaction (one COPY or executemany); how many."""
    return log_store.insert(conn, COLUMNS, rows)


def insert_logs(conn: Conn, entries: list[dict[str, Any]]) -> int:
    """Check and insert a batch of log entries in the caller's transaction; return how many were stored."""
    return insert_rows(conn, log_rows(entries, now()))


def store_rows(db: Database, rows: list[Row], allocation_id: str | None = None) -> int:
    """Store checked rows (`log_rows` / `body_rows`) in one transaction of their own. With `allocation_id` (a
    trial posting its own lines) every line is filed under that allocation and its trial."""
    with db.begin() as conn:
        if allocation_id is not None:
            trial_id = runs.trial_of(conn, allocation_id)
            rows = [(trial_id, allocation_id, *row[2:]) for row in rows]
        return insert_rows(conn, rows)


def store_batch(db: Database, data: dict[str, Any], allocation_id: str | None = None) -> int:
    """Check and store the lines of one POST to /task/logs (`body_rows`) in one transaction."""
    return store_rows(db, body_rows(data, now()), allocation_id)


def master_line(conn: Conn, trial_id: int, text: str, level: str = "INFO",
                allocation_id: str | None = None) -> None:
    """A line the master itself adds to a trial's log (restarts, preemptions, errors)."""
    insert_logs(
        conn,
        [{"trial_id": trial_id, "allocation_id": allocation_id, "log": text, "level": level, "source": "master",
          "stdtype": "stdout"}],
    )


def read_logs(conn: Conn, trial_id: int, after_id: int, limit: int = 5000,
              where: LogFilter | None = None) -> list[dict[str, Any]]:
    """A trial's stored lines after `after_id` that match `where`, oldest first, at most `limit`."""
    return log_store.of_trial(conn, trial_id, after_id, limit, where)


def tail_start(conn: Conn, trial_id: int, after_id: int, count: int, where: LogFilter | None = None) -> int:
    """Where to start reading to get only the last `count` matching lines."""
    return log_store.start_of_tail(conn, trial_id, after_id, count, where)
