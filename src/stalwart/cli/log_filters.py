"""The log filters of `t logs` and `e logs`: --level (and above), --since, --grep, --head/--tail."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.states import LOG_LEVELS

"""Log levels, least severe first (the master's)."""

_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class LogFilter:
    """What the master filters a log stream by; None: no filter."""

    levels: list[str] | None = None
    since: float | str | None = None
    grep: str | None = None
    head: int | None = None
    tail: int | None = None

    def params(self) -> dict[str, Any]:
        """The keyword arguments of `Client.stream_trial_logs`."""
        return {"levels": self.levels, "since": self.since, "grep": self.grep, "head": self.head, "tail": self.tail}


def parse_since(text: str, now: float | None = None) -> float | str:
    """`10m`, `2h`, `30s`, `1d`: that long ago, as epoch seconds; anything else (epoch seconds, an ISO 8601 time)
    goes to the master as written, which names it if it is neither."""
    match = _AGO.match(text)
    if match is None:
        return text.strip()
    ago = float(match.group(1)) * _SECONDS[match.group(2)]
    return (time.time() if now is None else now) - ago


def make_filter(level: str | None, since: str | None, grep: str | None, head: int | None, tail: int | None,
                follow: bool) -> LogFilter:
    """The filter the options ask for; InvalidRequest for a combination that cannot be honoured."""
    if head is not None and tail is not None:
        raise InvalidRequest("give only one of --head and --tail")
    if follow and head is not None:
        raise InvalidRequest("--head prints the first N lines and stops; it cannot be used with --follow (--tail N "
                             "can: the last N lines, then the new ones)")
    return LogFilter(levels=list(LOG_LEVELS[LOG_LEVELS.index(level):]) if level else None,
                     since=parse_since(since) if since is not None else None,
                     grep=grep or None, head=head, tail=tail)


def log_filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Adds the filter options; the command receives `log_filter` (a LogFilter) and its own `follow` flag, if any."""

    @functools.wraps(func)
    def with_filter(*args: Any, level: str | None, since: str | None, grep: str | None, head: int | None,
                    tail: int | None, **kwargs: Any) -> Any:
        log_filter = make_filter(level, since, grep, head, tail, bool(kwargs.get("follow")))
        return func(*args, log_filter=log_filter, **kwargs)

    options = [
        click.option("--level", type=click.Choice(LOG_LEVELS, case_sensitive=False), default=None,
                     callback=lambda _ctx, _param, value: value.upper() if value else None,
                     help="Only lines of this level or a more severe one."),
        click.option("--since", default=None, metavar="WHEN",
                     help="Only lines from then on: 10m, 2h, 1d ago, epoch seconds, or an ISO 8601 time."),
        click.option("--grep", default=None, metavar="TEXT", help="Only lines containing TEXT."),
        click.option("--head", type=click.IntRange(0), default=None, metavar="N", help="Only the first N lines."),
        click.option("--tail", type=click.IntRange(0), default=None, metavar="N", help="Only the last N lines."),
    ]
    decorated: Callable[..., Any] = with_filter
    for option in reversed(options):
        decorated = option(decorated)
    return decorated
