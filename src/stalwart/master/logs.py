"""Log intake (batched inserts) and the master's own lines in a trial's log."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.service import now

LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _level_of(line: str, default: str) -> str:
    head = line.lstrip()[:10].upper()
    for level in LEVELS:
        if head.startswith(level + ":") or head.startswith(level + " "):
            return level
    return default


def insert_logs(conn, entries: list[dict]) -> int:
    """Insert a batch of log entries in one statement; return how many were stored."""
    rows = []
    for e in entries:
        text = str(e.get("log", ""))
        stdtype = e.get("stdtype") or "stdout"
        rows.append(
            {
                "trial_id": e.get("trial_id"),
                "allocation_id": e.get("allocation_id"),
                "agent_id": e.get("agent_id"),
                "rank_id": e.get("rank_id"),
                "timestamp": float(e.get("timestamp") or now()),
                "level": e.get("level") or _level_of(text, "ERROR" if stdtype == "stderr" else "INFO"),
                "stdtype": stdtype,
                "source": e.get("source") or "task",
                "log": text,
            }
        )
    if rows:
        conn.execute(t.task_logs.insert(), rows)
    return len(rows)


def master_line(conn, trial_id: int, text: str, level: str = "INFO", allocation_id: str | None = None) -> None:
    """A line the master itself adds to a trial's log (restarts, preemptions, errors)."""
    insert_logs(
        conn,
        [{"trial_id": trial_id, "allocation_id": allocation_id, "log": text, "level": level, "source": "master",
          "stdtype": "stdout"}],
    )


def read_logs(conn, trial_id: int, after_id: int, limit: int = 5000) -> list[dict]:
    q = (
        sa.select(t.task_logs)
        .where(t.task_logs.c.trial_id == trial_id, t.task_logs.c.id > after_id)
        .order_by(t.task_logs.c.id)
        .limit(limit)
    )
    return [dict(r) for r in conn.execute(q).mappings()]
