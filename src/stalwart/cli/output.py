"""Printing: Rich tables for people, JSON or CSV for scripts (`emit` chooses), and human-friendly times."""

from __future__ import annotations

import csv
import datetime as dt
import enum
import json
import sys
from collections.abc import Iterable, Mapping

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

UNWRAPPED_WIDTH = 1_000_000
"""The page width of output that is not going to a terminal: scripts and logs read it, so no line is ever broken
for width (a table is as wide as its cells, a sentence as long as it is)."""


def _console(stderr: bool) -> Console:
    """A console for stdout or stderr: a terminal gets its own width; a pipe or a file an unbroken page. Markup is
    off: names, labels and log lines are user text and must print as they are."""
    tty = (sys.stderr if stderr else sys.stdout).isatty()
    return Console(stderr=stderr, highlight=False, markup=False, soft_wrap=not (stderr and tty),
                   width=None if tty else UNWRAPPED_WIDTH)


console = _console(stderr=False)
err_console = _console(stderr=True)


class Format(enum.Enum):
    """How a command prints its answer: `--json`, `--csv`, or a table for people."""

    TABLE = "table"
    JSON = "json"
    CSV = "csv"


def emit(fmt: Format, columns: list[str], rows: Iterable[Iterable[object]], *, json_data: object = None,
         title: str | None = None) -> None:
    """The one place rows are rendered: a table, CSV (a header line, then a line per row), or JSON (`json_data`,
    the API's answer, when given; else the rows as objects keyed by column)."""
    if fmt is Format.JSON:
        print_json(json_data if json_data is not None else [dict(zip(columns, map(plain, row), strict=True))
                                                           for row in rows])
    elif fmt is Format.CSV:
        print_csv(columns, rows)
    else:
        table(columns, rows, title=title)


def print_csv(columns: list[str], rows: Iterable[Iterable[object]]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(v) for v in row])
    sys.stdout.flush()


def plain(value: object) -> object:
    """A value as JSON shows it: an enum (a state) by its value, anything else as it is."""
    return value.value if isinstance(value, enum.Enum) else value


def print_json(data: object) -> None:
    """`data` as indented JSON; an API model as the master sent it (fields it left out stay out)."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json", exclude_unset=True)
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def when(ts: float | None) -> str:
    if not ts:
        return ""
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def table(columns: list[str], rows: Iterable[Iterable[object]], title: str | None = None) -> None:
    t = Table(title=title, show_lines=False, header_style="bold")
    for c in columns:
        t.add_column(c, overflow="fold")
    for row in rows:
        t.add_row(*[cell(v) for v in row])
    console.print(t)


def cell(value: object) -> str:
    """A value as a table shows it: nothing for None, an enum (a state) by its value."""
    if value is None:
        return ""
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)


def short_metrics(metrics: Mapping[str, object] | None, limit: int = 6) -> str:
    if not metrics:
        return ""
    parts = []
    for k, v in list(metrics.items())[:limit]:
        if isinstance(v, float):
            parts.append(f"{k}={v:.4g}")
        elif isinstance(v, (int, str, bool)):
            parts.append(f"{k}={v}")
    return " ".join(parts)


def info(msg: str) -> None:
    """A note for people on stderr (plain text: brackets in it are not markup)."""
    err_console.print(msg)


def warn(msg: str) -> None:
    err_console.print(Text("warning: ", style="yellow") + Text(msg))
