"""Lengths of time and points in time as people type them: `30d`, `12h`, `90m`, `3600`; `2h` ago, or
`2026-11-25T10:00` (the local time zone unless the text names one)."""

from __future__ import annotations

import datetime as dt
import re
import time

from stalwart.api.errors import InvalidRequest

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
DURATION_FORMS = "a number of seconds, or a number with s, m, h, d or w (e.g. 3600, 90m, 12h, 30d, 2w)"
WHEN_FORMS = "a time ago (30m, 2h, 7d), an ISO 8601 time (2026-11-25T10:00, local unless it names a zone), " \
             "or epoch seconds"


def parse_duration(text: str, what: str = "duration") -> float:
    """Seconds; InvalidRequest naming `what` and the accepted forms when `text` is none of them."""
    match = _DURATION.match(text)
    if match is None:
        raise InvalidRequest(f"{what} {text!r}: expected {DURATION_FORMS}")
    return float(match.group(1)) * UNITS[(match.group(2) or "s").lower()]


def parse_when(text: str, what: str = "time", now: float | None = None) -> float:
    """Epoch seconds: a duration with a unit is that long before `now`; a bare number is epoch seconds; else an
    ISO 8601 date or time."""
    match = _DURATION.match(text)
    if match is not None:
        if not match.group(2):
            return float(match.group(1))
        return (time.time() if now is None else now) - parse_duration(text, what)
    try:
        stamp = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidRequest(f"{what} {text!r}: expected {WHEN_FORMS}") from None
    return stamp.timestamp()  # a naive time is the local time zone's
