"""Storing log lines (bulk inserts of checked batches, the secrets handed to a task masked), the master's own lines in
a trial's log, reading them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stalwart.db.engine import Database
from stalwart.master.log_rows import COLUMNS, Row, body_rows, log_rows
from stalwart.master.queries import logs as log_store, runs
from stalwart.master.queries.logs import LogFilter
from stalwart.master.queries.rows import Conn
from stalwart.master.service import now

MASK = "********"
"""What a secret handed to a task (its allocation's token, its owner session) shows as in its stored logs."""
SecretsOf = Callable[[str], list[str]]
Watch = Callable[[Conn, list[Row]], object]


def insert_rows(conn: Conn, rows: list[Row]) -> int:
    """Insert rows (from `log_rows`), in order, in the caller's transaction (one COPY or executemany); how many."""
    return log_store.insert(conn, COLUMNS, rows)


def insert_logs(conn: Conn, entries: list[dict[str, Any]]) -> int:
    """Check and insert a batch of log entries in the caller's transaction; return how many were stored."""
    return insert_rows(conn, log_rows(entries, now()))


def store_rows(db: Database, rows: list[Row], allocation_id: str | None = None,
               secrets_of: SecretsOf | None = None, watch: Watch | None = None) -> int:
    """Store checked rows (`log_rows` / `body_rows`) in one transaction of their own. With `allocation_id` (a
    trial posting its own lines) every line is filed under that allocation and its trial. With `secrets_of` (the
    secrets handed to an allocation: `allocations.env.secrets_of`) each of them is masked in its lines. `watch` sees
    the rows as stored, in the same transaction (`log_policies.watch`)."""
    with db.begin() as conn:
        if allocation_id is not None:
            trial_id = runs.trial_of(conn, allocation_id)
            rows = [(trial_id, allocation_id, *row[2:]) for row in rows]
        if secrets_of is not None:
            rows = mask_secrets(rows, secrets_of)
        stored = insert_rows(conn, rows)
        if watch is not None:
            watch(conn, rows)
        return stored


def mask_secrets(rows: list[Row], secrets_of: SecretsOf) -> list[Row]:
    """`rows` with every secret handed to a row's allocation replaced by MASK in its text. The secrets of each
    allocation are asked for once per batch; a line costs one substring check per secret."""
    known: dict[str, list[str]] = {}
    out = rows
    for i, row in enumerate(rows):
        allocation_id, text = row[1], row[8]
        if allocation_id is None or not text:
            continue
        secrets = known.get(allocation_id)
        if secrets is None:
            secrets = known[allocation_id] = [s for s in secrets_of(allocation_id) if s]
        masked = text
        for secret in secrets:
            if secret in masked:
                masked = masked.replace(secret, MASK)
        if masked is not text:
            if out is rows:
                out = list(rows)
            out[i] = (*row[:8], masked)
    return out


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
