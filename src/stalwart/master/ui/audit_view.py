"""The audit-log page's rows: the newest entry first, its time in UTC, read leniently from the address bar."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from stalwart.api.errors import InvalidRequest

DEFAULT_LIMIT = 200
MAX_LIMIT = 10_000


def page_limit(raw: str | None) -> int:
    """How many entries to show: `?limit=` (1..10000), or the default when it is missing or empty."""
    if raw is None or raw.strip() == "":
        return DEFAULT_LIMIT
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidRequest(f"limit: expected a whole number from 1 to {MAX_LIMIT}, got {raw[:40]!r}")
    return int(raw)


def when(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def rows(entries: Sequence[Any]) -> list[dict[str, Any]]:
    """The page's rows from `queries.users.audit_entries` (oldest first), newest first."""
    return [{"id": e["id"], "when": when(e["timestamp"]), "user": e["username"] or "—", "method": e["method"],
             "path": e["path"], "target": e["target"] or "—", "status": e["status"], "outcome": e["outcome"]}
            for e in reversed(entries)]
