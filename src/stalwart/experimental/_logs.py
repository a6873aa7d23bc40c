"""A trial's log lines for `Trial.iter_logs`, filtered as Determined's SDK filters them.

The master filters by level, time, text, head and tail; the filters it lacks (ranks, stdout/stderr, sources,
`timestamp_before`) apply here, and then `head` and `tail` apply here too, after them.
"""

from __future__ import annotations

import collections
import enum
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.trials import LogEntry
from stalwart.api.states import LOG_LEVELS
from stalwart.client import Client


class LogLevel(enum.Enum):
    """A log level, for `Trial.iter_logs(min_level=...)`."""

    TRACE = "TRACE"
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


@dataclass(frozen=True)
class LocalFilters:
    """What the master cannot filter by: each None lets every line through."""

    rank_ids: Sequence[int] | None = None
    stdtypes: Sequence[str] | None = None
    sources: Sequence[str] | None = None
    before: float | None = None  # epoch seconds

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.rank_ids, self.stdtypes, self.sources, self.before))

    def keeps(self, entry: LogEntry) -> bool:
        return ((self.rank_ids is None or entry.rank_id in self.rank_ids)
                and (self.stdtypes is None or entry.stdtype in self.stdtypes)
                and (self.sources is None or entry.source in self.sources)
                and (self.before is None or (entry.timestamp is not None and entry.timestamp < self.before)))


def levels_from(levels: list[str] | None, min_level: LogLevel | str | None) -> list[str] | None:
    """The levels to ask the master for: `levels`, or every level at or above `min_level`."""
    if min_level is None:
        return levels
    name = (min_level.name if isinstance(min_level, enum.Enum) else str(min_level)).upper()
    name = name.removeprefix("LOG_LEVEL_")
    if name not in LOG_LEVELS:
        raise InvalidRequest(f"min_level: expected one of {', '.join(LOG_LEVELS)}, got {min_level!r}")
    at_least = LOG_LEVELS[LOG_LEVELS.index(name):]
    return [lv for lv in levels if lv.upper() in at_least] if levels else list(at_least)


def epoch_seconds(what: str, value: float | str | None) -> float | None:
    """A time given as epoch seconds or ISO 8601 text, as epoch seconds."""
    if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
        return None if value is None else float(value)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InvalidRequest(f"{what}: expected epoch seconds or an ISO 8601 time, got {value!r}") from None


def trial_log_lines(client: Client, trial_id: int, *, follow: bool, head: int | None, tail: int | None,
                    levels: list[str] | None, since: float | str | None, search_text: str | None,
                    local: LocalFilters) -> Iterator[str]:
    """The trial's log lines: the master's filters, then `local`'s, then `head` / `tail` when `local` filters."""
    here = local.any
    entries = client.stream_trial_logs(trial_id, follow=follow, levels=levels, since=since, grep=search_text,
                                       head=None if here else head, tail=None if here else tail)
    if not here:
        yield from (e.log for e in entries)
        return
    kept = (e.log for e in entries if local.keeps(e))
    if head is not None:
        yield from itertools.islice(kept, head)
    elif tail is not None:
        yield from collections.deque(kept, maxlen=tail) if tail else ()
    else:
        yield from kept
