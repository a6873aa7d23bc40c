"""`stalwart audit list`: the audit log (admins): every call that changed something, who made it, and how it
ended (ok, refused, throttled, failed)."""

from __future__ import annotations

import click

from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.cli.durations import WHEN_FORMS, parse_when


@click.group("audit", cls=AliasedGroup, aliases={"ls": "list"})
def audit() -> None:
    """Read the audit log of changes (admins only).

    The master records every call that changed something: who made it, when, and how it ended (ok, refused,
    throttled, failed)."""


@audit.command("list")
@click.option("--user", "username", default=None, help="Only this user's calls.")
@click.option("--since", default=None, metavar="WHEN", help=f"Only calls from then on: {WHEN_FORMS}.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True,
              help="The most entries to show (the newest).")
@format_options
@click.pass_context
def list_entries(ctx: click.Context, username: str | None, since: str | None, limit: int, fmt: output.Format) -> None:
    """List the newest entries of the audit log, oldest first.

    Admins only. The --limit newest entries (after --user and --since filter them), each with its time, user,
    method and path, what it acted on, and its status and outcome. It changes nothing."""
    after = parse_when(since, "--since") if since is not None else None
    entries = client_of(ctx).audit_log(username=username, since=after, limit=limit)
    output.emit(fmt, ["Time", "User", "Method", "Path", "Target", "Status", "Outcome"],
                [(output.when(e.timestamp), e.username, e.method, e.path, e.target, e.status, e.outcome)
                 for e in entries],
                json_data={"entries": [e.model_dump(mode="json") for e in entries]})
