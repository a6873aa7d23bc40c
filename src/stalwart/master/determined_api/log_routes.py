"""The Determined listener's handlers for trial logs: `GET /api/v1/trials/{trial_id}/logs`, the NDJSON stream of
`{"result": TrialLogsResponse}` lines that `det trial logs [-f] [--head N | --tail N]` and `det e create -f` read.

Lines are read as Stalwart's own log route reads them (`master.logs`: filtered in SQL by level, time and text) and
encoded as the real master encodes them (det-wire.md §2.7). The answer is chunked, each block of lines flushed as it
is read; with `follow=true` it stays open while the trial may still log, and ends once the trial is over and its lines
are all sent, as the real master's does (else `det trial logs -f` would never return). A filter this master cannot
apply is refused with a 400 naming it, never ignored.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from stalwart.api.determined_routes import DET_BY_KEY
from stalwart.api.errors import InvalidRequest
from stalwart.api.models.determined.logs import LogLevel, OrderBy, TrialLogsResponse
from stalwart.api.states import LOG_LEVELS
from stalwart.master.determined_api.wire import rfc3339
from stalwart.master.logs import read_logs, tail_start
from stalwart.master.queries import trials as trial_rows
from stalwart.master.queries.logs import LogFilter
from stalwart.master.routes.common import IdPath, master
from stalwart.master.routes.contract import route
from stalwart.master.routes.trials import trial_open as trial_may_still_log
from stalwart.master.service import Master

router = APIRouter()

BLOCK = 5000  # lines read (in a worker thread) and sent at a time
FOLLOW_POLL_S = 0.25  # how often a followed trial's log is looked at again (as Stalwart's own log route does)
NEWEST_FIRST_MAX = 100_000  # the most lines ORDER_BY_DESC sends: they are read, then sent in reverse
CONTAINER_ID_WIDTH = 8  # the real master's message shows a container id in 8 characters (8 spaces without one)
LEVEL_OF: dict[str, LogLevel] = {"TRACE": "LOG_LEVEL_TRACE", "DEBUG": "LOG_LEVEL_DEBUG", "INFO": "LOG_LEVEL_INFO",
                                 "WARNING": "LOG_LEVEL_WARNING", "ERROR": "LOG_LEVEL_ERROR",
                                 "CRITICAL": "LOG_LEVEL_CRITICAL"}
UNSERVED_FILTERS = ("agentIds", "containerIds", "rankIds", "sources", "stdtypes", "timestampBefore")
SERVED = "levels, searchText, timestampAfter, limit, orderBy, follow"

LimitQuery = Annotated[int, Query(ge=0, le=2**31 - 1, description="the most lines; 0: all of them")]
LevelsQuery = Annotated[list[str] | None, Query(max_length=16, description="only these levels (LOG_LEVEL_...)")]
TextQuery = Annotated[str | None, Query(max_length=1024, description="only lines containing this text")]
TimeQuery = Annotated[str | None, Query(max_length=64, description="only lines after this RFC 3339 time")]


@dataclass(frozen=True)
class LogQuery:
    """What one call asks for: the trial, which lines (`where`), how many (0: all), newest first or not, follow."""

    trial_id: int
    where: LogFilter
    limit: int
    newest_first: bool
    follow: bool


def stalwart_levels(levels: list[str] | None) -> tuple[str, ...]:
    """`LOG_LEVEL_WARNING`... as Stalwart's level names; LOG_LEVEL_UNSPECIFIED (the client's "any") adds none."""
    out: list[str] = []
    for value in levels or []:
        name = value.strip().upper().removeprefix("LOG_LEVEL_")
        if name == "UNSPECIFIED":
            continue
        if name not in LOG_LEVELS:
            raise InvalidRequest(f"levels: unknown log level {value!r}; use any of "
                                 f"{', '.join('LOG_LEVEL_' + level for level in LOG_LEVELS)}")
        out.append(name)
    return tuple(dict.fromkeys(out))


def after(name: str, text: str | None) -> float | None:
    """The `since` (at or after, epoch seconds) that keeps the lines strictly after an RFC 3339 time, as the real
    master's `timestampAfter` does; UTC where the time names no zone."""
    if text is None or not text.strip():
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidRequest(f"{name}: {text!r} is not an RFC 3339 time (e.g. 2026-01-02T03:04:05Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return math.nextafter(moment.timestamp(), math.inf)


def refuse_unserved(request: Request) -> None:
    """A filter the real master has and this one cannot apply yet is a 400 naming it: ignoring it would answer
    lines the caller asked to leave out."""
    params = request.query_params
    for name in UNSERVED_FILTERS:
        if any(v.strip() for v in params.getlist(name)):
            raise InvalidRequest(f"{name}: Stalwart does not filter trial logs by this yet; leave it out (served: "
                                 f"{SERVED}), or use `stalwart trial logs`")
    if params.get("enableRegex", "false").lower() not in ("false", "0", ""):
        raise InvalidRequest("enableRegex: Stalwart searches trial logs for plain text only; leave it out "
                             "(searchText is matched as a substring)")


def log_query(trial_id: int, follow: bool, limit: int, order_by: OrderBy | None, where: LogFilter) -> LogQuery:
    newest_first = order_by == "ORDER_BY_DESC"
    if newest_first and follow:
        raise InvalidRequest("orderBy: ORDER_BY_DESC cannot be combined with follow=true (new lines come last)")
    if newest_first and not 0 < limit <= NEWEST_FIRST_MAX:
        raise InvalidRequest(f"limit: ORDER_BY_DESC needs a limit of 1..{NEWEST_FIRST_MAX} (the last lines); "
                             f"got {limit}")
    return LogQuery(trial_id, where, limit, newest_first, follow)


def message_of(row: dict[str, Any], when: str) -> str:
    """The line as the real master shows it: `[time] <container> [rank=N] || LEVEL: text`, ending in a newline."""
    parts = [f"[{when}]", " " * CONTAINER_ID_WIDTH]
    if row["rank_id"] is not None:
        parts.append(f"[rank={row['rank_id']}]")
    parts += ["||", f"{row['level']}:", row["log"]]
    text = " ".join(parts)
    return text if text.endswith("\n") else text + "\n"


def level_of(name: str) -> LogLevel:
    """A stored level as Determined's enum value (one it does not know: LOG_LEVEL_UNSPECIFIED)."""
    return LEVEL_OF.get(name.upper(), "LOG_LEVEL_UNSPECIFIED")


def encode(rows: list[dict[str, Any]]) -> str:
    """Stored lines as stream lines: `{"result": TrialLogsResponse}` each, one JSON object a line."""
    out = []
    for row in rows:
        when = rfc3339(row["timestamp"] if math.isfinite(row["timestamp"]) else 0.0) or ""
        entry = TrialLogsResponse(
            id=str(row["id"]), timestamp=when, message=message_of(row, when), level=level_of(row["level"]),
            trialId=row["trial_id"], agentId=row["agent_id"], rankId=row["rank_id"], log=row["log"],
            source=row["source"], stdtype=row["stdtype"])
        out.append(json.dumps({"result": entry.model_dump(exclude_none=True)}) + "\n")
    return "".join(out)


def read_block(m: Master, q: LogQuery, after_id: int, limit: int) -> tuple[int, int, str]:
    """The next matching lines after `after_id`, encoded: the id of the last of them, how many, the text."""
    with m.db.begin() as conn:
        rows = read_logs(conn, q.trial_id, after_id, limit, q.where)
    return (rows[-1]["id"] if rows else after_id), len(rows), encode(rows)


def last_lines(m: Master, q: LogQuery) -> str:
    """The last `q.limit` matching lines, newest first, encoded."""
    with m.db.begin() as conn:
        start = tail_start(conn, q.trial_id, 0, q.limit, q.where)
        rows = read_logs(conn, q.trial_id, start, q.limit, q.where)
    rows.reverse()
    return encode(rows)


async def oldest_first(request: Request, m: Master, q: LogQuery) -> AsyncIterator[str]:
    """The matching lines in order, a block at a time; following, until the trial is over and all are sent."""
    last, left = 0, (q.limit or None)
    while left is None or left > 0:
        # asked before reading: a line written before the trial ended is read by the read after this look
        still_open = q.follow and await run_in_threadpool(trial_may_still_log, m, q.trial_id)
        # read and encode in a worker thread, a block at a time: a long log does not hold up the event loop
        last, count, text = await run_in_threadpool(read_block, m, q, last, BLOCK if left is None else min(BLOCK, left))
        if count:
            left = None if left is None else left - count
            yield text
            continue
        if not still_open or await request.is_disconnected():
            return
        await asyncio.sleep(FOLLOW_POLL_S)


async def newest_first(m: Master, q: LogQuery) -> AsyncIterator[str]:
    yield await run_in_threadpool(last_lines, m, q)


@route(router, "GET", "/api/v1/trials/{trial_id}/logs", table=DET_BY_KEY)
async def trial_logs(request: Request, trial_id: IdPath, follow: bool = False, limit: LimitQuery = 0,
                     orderBy: OrderBy | None = None, levels: LevelsQuery = None, searchText: TextQuery = None,
                     timestampAfter: TimeQuery = None) -> StreamingResponse:
    """Determined's TrialLogs: `limit` lines (0: all) oldest first, or with ORDER_BY_DESC the last `limit` newest
    first (`--tail`: the client reverses them); `follow` keeps the stream open until the trial is over."""
    refuse_unserved(request)
    where = LogFilter(levels=stalwart_levels(levels), since=after("timestampAfter", timestampAfter),
                      grep=searchText or None)
    q = log_query(trial_id, follow, limit, orderBy, where)
    m = master(request)
    with m.db.begin() as conn:
        trial_rows.get(conn, trial_id)
    lines = newest_first(m, q) if q.newest_first else oldest_first(request, m, q)
    return StreamingResponse(lines, media_type="application/x-ndjson")
