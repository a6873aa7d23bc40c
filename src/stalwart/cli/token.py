"""`stalwart token|tkn create|list|revoke`: long-lived access tokens for automation (scripts, CI).

A token acts as its user: send it as `Authorization: Bearer TOKEN`, or set STALWART_USER_TOKEN (DET_USER_TOKEN)
for the CLI and the SDK. Its secret is printed once, when it is created.
"""

from __future__ import annotations

import time

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.users import Token
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.cli.durations import DURATION_FORMS, parse_duration

MIN_LIFESPAN_S = 60
MAX_LIFESPAN_S = 10 * 365 * 86400


@click.group("token", cls=AliasedGroup, aliases={"ls": "list"})
def token() -> None:
    """Create, list and revoke access tokens for scripts.

    A token acts as its user without a password: set STALWART_USER_TOKEN (or DET_USER_TOKEN) for the CLI and the
    SDK, or send it as `Authorization: Bearer TOKEN`. Its secret is shown once, when it is created. `tkn` is
    short for `token`."""


def lifespan_seconds(text: str) -> int:
    """A --lifespan in whole seconds, within what the master accepts (1 minute to 10 years)."""
    seconds = round(parse_duration(text, "lifespan"))
    if not MIN_LIFESPAN_S <= seconds <= MAX_LIFESPAN_S:
        raise InvalidRequest(f"lifespan {text!r}: a token lives from 1 minute (60) to 10 years (3650d); "
                             f"give {DURATION_FORMS}")
    return seconds


def state_of(t: Token, now: float | None = None) -> str:
    if t.revoked:
        return "revoked"
    if t.expiresAt is not None and t.expiresAt <= (time.time() if now is None else now):
        return "expired"
    return "active"


@token.command("create")
@click.option("-l", "--lifespan", default=None, metavar="DURATION",
              help="How long it works: 3600 (seconds), 90m, 12h, 30d, 2w (default 30d).")
@click.option("-d", "--description", default=None, help="What it is for (shown by `token list`).")
@click.option("--user", "username", default=None, help="Whose token (admins only; default: yours).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON (the token and its details).")
@click.pass_context
def create(ctx: click.Context, lifespan: str | None, description: str | None, username: str | None,
           as_json: bool) -> None:
    """Create an access token and print its secret, only this once.

    The secret goes to standard output (the rest to standard error, so `$(stalwart token create)` captures just
    the token); it works for --lifespan (default 30 days) until `revoke` ends it. Admins may create one for
    another user with --user."""
    seconds = lifespan_seconds(lifespan) if lifespan is not None else None
    made = client_of(ctx).create_token(username=username, lifespan_s=seconds, description=description)
    if as_json:
        output.print_json(made)
        return
    info = made.tokenInfo
    expires = f"expires {output.when(info.expiresAt)}" if info.expiresAt else "never expires"
    output.info(f"Access token {info.id} of user {info.username} ({expires}). It is shown only now: keep it "
                f"secret. Use it as STALWART_USER_TOKEN, or send it as `Authorization: Bearer TOKEN`; "
                f"`stalwart token revoke {info.id}` ends it.")
    output.console.print(made.token)


@token.command("list")
@click.option("-a", "--all", "all_users", is_flag=True, help="Every user's tokens (admins only).")
@format_options
@click.pass_context
def list_tokens(ctx: click.Context, all_users: bool, fmt: output.Format) -> None:
    """List your access tokens and whether each still works.

    A row per token (every user's with --all, admins only): id, user, description, when it was created and
    expires, and its state (active, expired or revoked). The secrets are never shown again."""
    tokens = client_of(ctx).list_tokens(all_users=all_users)
    now = time.time()
    output.emit(fmt, ["ID", "User", "Description", "Created", "Expires", "State"],
                [(t.id, t.username, t.description, output.when(t.createdAt), output.when(t.expiresAt),
                  state_of(t, now)) for t in tokens],
                json_data={"tokens": [t.model_dump(mode="json") for t in tokens]})


@token.command("revoke")
@click.argument("token_id", type=click.IntRange(0), metavar="ID")
@click.pass_context
def revoke(ctx: click.Context, token_id: int) -> None:
    """Revoke an access token: it stops working at once.

    Token ID (see `list`) is refused from the next call on, and cannot be used again; `create` makes a new
    one."""
    revoked = client_of(ctx).revoke_token(token_id)
    output.console.print(f"Revoked access token {revoked.id} of user {revoked.username}.")
