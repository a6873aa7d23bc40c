"""Log intake (checked, bulk-inserted batches) and the master's own lines in a trial's log."""

from __future__ import annotations

import re

import sqlalchemy as sa

from stalwart.api.errors import InvalidRequest
from stalwart.db import tables as t
from stalwart.master.service import now

LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


_LEVEL = re.compile(r"\s*(" + "|".join(LEVELS) + r")[: ]", re.IGNORECASE)


def _level_of(line: str, default: str) -> str:
    m = _LEVEL.match(line)
    return m.group(1).upper() if m else default


# (field, types, longest string the column holds): what a stored line may carry; anything else is a 400
_NONE = type(None)
_FIELDS = (("log", (str,), None), ("stdtype", (str,), 16), ("level", (str,), 16), ("source", (str,), 32),
           ("agent_id", (str,), 128), ("allocation_id", (str,), 64), ("trial_id", (int,), None),
           ("rank_id", (int,), None), ("timestamp", (int, float), None))
_KIND_NAMES = {(str,): "a string", (int,): "an integer", (int, float): "a number"}
_S, _I, _N = {str, _NONE}, {int, _NONE}, {int, float, _NONE}  # exact types: a bool is no number here
_NUMBER = {int, float}
_COLUMNS = ("trial_id", "allocation_id", "agent_id", "rank_id", "timestamp", "level", "stdtype", "source", "log")


def _problem(where: str, e, example: str = '{"log": "text", "timestamp": 1.5}') -> InvalidRequest | None:
    """The first thing wrong with the entry (or run) at `where`, or None."""
    if not isinstance(e, dict):
        return InvalidRequest(f"{where}: expected an object such as {example}")
    for name, kinds, longest in _FIELDS:
        value = e.get(name)
        if value is None:
            continue
        if type(value) not in kinds or (longest and len(value) > longest):
            what = _KIND_NAMES[kinds] + (f" of at most {longest} characters" if longest else "")
            return InvalidRequest(f"{where}.{name}: expected {what} or null, got {value!r}"[:300])
    return None


def _text(value: str) -> str:
    """What the database can hold: no NUL (PostgreSQL refuses it in text), no lone surrogate (not UTF-8)."""
    if "\x00" in value:
        value = value.replace("\x00", "\\x00")
    if not value.isascii():
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def log_rows(entries) -> list[tuple]:
    """Check a `logs` list ({log, timestamp, stdtype, level, source, agent_id, allocation_id, trial_id, rank_id},
    each optional) and turn it into rows in `_COLUMNS` order; a bad entry is a 400 naming it and its field."""
    if not isinstance(entries, list):
        raise InvalidRequest("logs: expected a list of log entries ({log, timestamp, stdtype, ...})")
    stamp = now()
    rows = []
    append = rows.append
    for i, e in enumerate(entries):
        if type(e) is not dict:
            raise _problem(f"logs[{i}]", e)
        get = e.get
        text, stdtype, level, source = get("log"), get("stdtype"), get("level"), get("source")
        agent, alloc, trial, rank, ts = get("agent_id"), get("allocation_id"), get("trial_id"), get("rank_id"), \
            get("timestamp")
        if not (type(text) in _S and type(stdtype) in _S and type(level) in _S and type(source) in _S
                and type(agent) in _S and type(alloc) in _S and type(trial) in _I and type(rank) in _I
                and type(ts) in _N) or \
                (stdtype and len(stdtype) > 16) or (level and len(level) > 16) or (source and len(source) > 32) \
                or (agent and len(agent) > 128) or (alloc and len(alloc) > 64):
            raise _problem(f"logs[{i}]", e) or InvalidRequest(f"logs[{i}]: not a valid log entry")
        text = _text(text) if text else ""
        stdtype = stdtype or "stdout"
        append((trial, alloc, agent, rank, float(ts or stamp),
                level or _level_of(text, "ERROR" if stdtype == "stderr" else "INFO"), stdtype, source or "task",
                text))
    return rows


_RUN_EXAMPLE = '{"allocation_id": "...", "stdtype": "stdout", "lines": [[1700000000.5, "text"]]}'


def run_rows(runs) -> list[tuple]:
    """Check `runs` (what agents send: consecutive lines of one stream, {allocation_id, trial_id, agent_id,
    rank_id, stdtype, source, level, lines: [[timestamp, text], ...]}) and turn them into rows, in order."""
    if not isinstance(runs, list):
        raise InvalidRequest(f"runs: expected a list of runs of lines such as {_RUN_EXAMPLE}")
    rows = []
    append = rows.append
    for i, r in enumerate(runs):
        if problem := _problem(f"runs[{i}]", r, _RUN_EXAMPLE):
            raise problem
        lines = r.get("lines")
        if type(lines) is not list:
            raise InvalidRequest(f"runs[{i}].lines: expected a list of [timestamp, text] pairs")
        trial, alloc, agent, rank = r.get("trial_id"), r.get("allocation_id"), r.get("agent_id"), r.get("rank_id")
        stdtype, source, level = r.get("stdtype") or "stdout", r.get("source") or "task", r.get("level")
        default = "ERROR" if stdtype == "stderr" else "INFO"
        for j, pair in enumerate(lines):
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) not in _NUMBER or type(pair[1]) is not str:
                raise InvalidRequest(f"runs[{i}].lines[{j}]: expected [timestamp, text] (a number and a string), "
                                     f"got {pair!r}"[:300])
            ts, text = pair
            text = _text(text)
            append((trial, alloc, agent, rank, float(ts), level or _level_of(text, default), stdtype, source, text))
    return rows


def body_rows(data: dict) -> list[tuple]:
    """The rows of a POST to /task/logs: its `logs` (one object per line) and its `runs` (agents), in that order."""
    if data.get("logs") is None and data.get("runs") is None:
        raise InvalidRequest(f"logs: expected a list of log entries ({{log, timestamp, stdtype, ...}}), or runs: "
                             f"a list of runs of lines such as {_RUN_EXAMPLE}")
    rows = log_rows(data["logs"]) if data.get("logs") is not None else []
    if data.get("runs") is not None:
        rows += run_rows(data["runs"])
    return rows


def insert_rows(conn, rows: list[tuple]) -> int:
    """Insert rows (from `log_rows`), in order, in the caller's transaction: PostgreSQL, one COPY; SQLite, one
    executemany of plain tuples (no per-row SQLAlchemy work). Returns how many."""
    if not rows:
        return 0
    if conn.dialect.name == "postgresql":
        cur = conn.connection.cursor()
        try:
            with cur.copy(f"COPY task_logs ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        finally:
            cur.close()
    elif conn.dialect.paramstyle == "qmark":
        conn.exec_driver_sql(
            f"INSERT INTO task_logs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})", rows)
    else:
        conn.execute(t.task_logs.insert(), [dict(zip(_COLUMNS, row)) for row in rows])
    return len(rows)


def insert_logs(conn, entries: list[dict]) -> int:
    """Check and insert a batch of log entries in the caller's transaction; return how many were stored."""
    return insert_rows(conn, log_rows(entries))


def store_batch(db, data: dict, allocation_id: str | None = None) -> int:
    """Check and store the lines of one POST to /task/logs (`body_rows`) in a transaction of its own (rows are
    built before it begins, so it is short); made to run off the event loop. With `allocation_id` (a trial
    posting its own lines) every line is filed under it and its trial."""
    rows = body_rows(data)
    with db.begin() as conn:
        if allocation_id is not None:
            trial_id = conn.execute(
                sa.select(t.allocations.c.trial_id).where(t.allocations.c.id == allocation_id)).scalar()
            rows = [(trial_id, allocation_id, *row[2:]) for row in rows]
        return insert_rows(conn, rows)


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
