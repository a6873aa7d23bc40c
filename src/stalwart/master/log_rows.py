"""What a POST to /task/logs may carry, checked and turned into task_logs rows (a bad field is a 400 naming it)."""

from __future__ import annotations

import re
from typing import Any

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.agents import MAX_LOG_TIMESTAMP
from stalwart.api.states import LOG_LEVELS

COLUMNS = ("trial_id", "allocation_id", "agent_id", "rank_id", "timestamp", "level", "stdtype", "source", "log")

_LEVEL = re.compile(r"\s*(" + "|".join(LOG_LEVELS) + r")[: ]", re.IGNORECASE)
_INT32 = (-(2**31), 2**31 - 1)
MAX_TIMESTAMP = MAX_LOG_TIMESTAMP  # the last second of year 9999 (UTC); the REST model (TaskLogs) says the same
_WHEN = f"seconds since the epoch, 0..{MAX_TIMESTAMP:.0f}"
# (field, types, longest string the column holds): what a stored line may carry
_FIELDS = (("log", (str,), None), ("stdtype", (str,), 16), ("level", (str,), 16), ("source", (str,), 32),
           ("agent_id", (str,), 128), ("allocation_id", (str,), 64), ("trial_id", (int,), None),
           ("rank_id", (int,), None), ("timestamp", (int, float), None))
_KIND_NAMES = {(str,): "a string", (int,): f"an integer in {_INT32[0]}..{_INT32[1]}", (int, float): "a finite number"}
_NONE = type(None)
_S, _I, _N = {str, _NONE}, {int, _NONE}, {int, float, _NONE}  # exact types: a bool is no number here
_NUMBER = {int, float}
# one task_logs row, in COLUMNS order
Row = tuple[int | None, str | None, str | None, int | None, float, str, str, str, str]
_RUN_EXAMPLE = '{"allocation_id": "...", "stdtype": "stdout", "lines": [[1700000000.5, "text"]]}'


def level_of(line: str, default: str) -> str:
    """The level a line names at its start (`WARNING: ...`, `error ...`), else `default`."""
    m = _LEVEL.match(line)
    return m.group(1).upper() if m else default


def _timestamp(value: Any) -> float | None:
    """The number as a float when it is a time the database and its readers can hold (0..MAX_TIMESTAMP), or None."""
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if 0.0 <= value <= MAX_TIMESTAMP else None


def _problem(where: str, e: Any, example: str = '{"log": "text", "timestamp": 1.5}') -> InvalidRequest | None:
    """The first thing wrong with the entry (or run) at `where`, or None."""
    if not isinstance(e, dict):
        return InvalidRequest(f"{where}: expected an object such as {example}")
    for name, kinds, longest in _FIELDS:
        value = e.get(name)
        if value is None:
            continue
        if (type(value) not in kinds or (longest and len(value) > longest)
                or (kinds == (int,) and not _INT32[0] <= value <= _INT32[1])
                or (name == "timestamp" and _timestamp(value) is None)):
            what = _KIND_NAMES[kinds] + (f" of at most {longest} characters" if longest else "")
            when = f" ({_WHEN})" if name == "timestamp" else ""
            return InvalidRequest(f"{where}.{name}: expected {what} or null{when}, got {value!r}"[:300])
    return None


def _text(value: str) -> str:
    """What the database can hold: no NUL (PostgreSQL refuses it in text), no lone surrogate (not UTF-8)."""
    if "\x00" in value:
        value = value.replace("\x00", "\\x00")
    if not value.isascii():
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def log_rows(entries: Any, stamp: float) -> list[Row]:
    """Rows (in `COLUMNS` order) of a `logs` list: one object per line {log, timestamp, stdtype, level, source,
    agent_id, allocation_id, trial_id, rank_id}, each field optional; `stamp` is the time for lines without one."""
    if not isinstance(entries, list):
        raise InvalidRequest("logs: expected a list of log entries ({log, timestamp, stdtype, ...})")
    rows: list[Row] = []
    append = rows.append
    lo, hi = _INT32
    for i, e in enumerate(entries):
        if type(e) is not dict:
            raise _problem(f"logs[{i}]", e) or InvalidRequest(f"logs[{i}]: expected an object")
        get = e.get
        text, stdtype, level, source = get("log"), get("stdtype"), get("level"), get("source")
        agent, alloc, trial, rank, ts = (get("agent_id"), get("allocation_id"), get("trial_id"), get("rank_id"),
                                         get("timestamp"))
        ts = stamp if ts is None else _timestamp(ts) if type(ts) in _NUMBER else None
        if (not (type(text) in _S and type(stdtype) in _S and type(level) in _S and type(source) in _S
                 and type(agent) in _S and type(alloc) in _S and type(trial) in _I and type(rank) in _I)
                or ts is None or (stdtype and len(stdtype) > 16) or (level and len(level) > 16)
                or (source and len(source) > 32) or (agent and len(agent) > 128) or (alloc and len(alloc) > 64)
                or (trial is not None and not lo <= trial <= hi) or (rank is not None and not lo <= rank <= hi)):
            raise _problem(f"logs[{i}]", e) or InvalidRequest(f"logs[{i}]: not a valid log entry")
        text = _text(text) if text else ""
        stdtype = stdtype or "stdout"
        append((trial, alloc, agent, rank, ts, level or level_of(text, "ERROR" if stdtype == "stderr" else "INFO"),
                stdtype, source or "task", text))
    return rows


def run_rows(runs: Any) -> list[Row]:
    """Rows of `runs` (what agents send: consecutive lines of one stream, {allocation_id, trial_id, agent_id,
    rank_id, stdtype, source, level, lines: [[timestamp, text], ...]}), in order."""
    if not isinstance(runs, list):
        raise InvalidRequest(f"runs: expected a list of runs of lines such as {_RUN_EXAMPLE}")
    rows: list[Row] = []
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
            # NaN fails every comparison and the infinities the range: no separate finiteness check
            if (type(pair) is not list or len(pair) != 2 or type(pair[1]) is not str
                    or not (type(pair[0]) is float and 0.0 <= pair[0] <= MAX_TIMESTAMP
                            or type(pair[0]) is int and 0 <= pair[0] <= MAX_TIMESTAMP)):
                raise InvalidRequest(f"runs[{i}].lines[{j}]: expected [timestamp, text] (a finite number, {_WHEN}, "
                                     f"and a string), got {pair!r}"[:300])
            ts, text = pair
            text = _text(text)
            append((trial, alloc, agent, rank, float(ts), level or level_of(text, default), stdtype, source, text))
    return rows


def body_rows(data: dict[str, Any], stamp: float) -> list[Row]:
    """The rows of a POST to /task/logs: its `logs` (one object per line) and its `runs` (agents), in that order."""
    if data.get("logs") is None and data.get("runs") is None:
        raise InvalidRequest(f"logs: expected a list of log entries ({{log, timestamp, stdtype, ...}}), or runs: "
                             f"a list of runs of lines such as {_RUN_EXAMPLE}")
    rows = log_rows(data["logs"], stamp) if data.get("logs") is not None else []
    if data.get("runs") is not None:
        rows += run_rows(data["runs"])
    return rows
