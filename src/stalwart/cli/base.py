"""Click plumbing shared by every command: aliases, the client of the -m master as the -u user, --json/--csv."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from stalwart.api.errors import InvalidRequest
from stalwart.cli import target
from stalwart.cli.output import Format
from stalwart.client import Client

Callback = TypeVar("Callback", bound=Callable[..., object])
"""A command's function, as click's option decorators take it and give it back."""


class AliasedGroup(click.Group):
    """A group whose commands also answer to short aliases (`e` for `experiment`, `ls` for `list`)."""

    def __init__(self, *args: Any, aliases: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases = aliases or {}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                            list[str]]:
        _name, cmd, rest = super().resolve_command(ctx, args)
        return cmd.name if cmd else None, cmd, rest


@dataclasses.dataclass
class RootOptions:
    """The root command's options, kept in its context's `obj`: -m, -u, and the client made of them once needed."""

    master: str | None = None
    user: str | None = None
    client: Client | None = None


def root_options(ctx: click.Context) -> RootOptions:
    """The root's options (all unset when the command was invoked without the root, as some tests do)."""
    root = ctx.find_root()
    if not isinstance(root.obj, RootOptions):
        root.obj = RootOptions()
    return root.obj


def client_of(ctx: click.Context) -> Client:
    """The command's client: the root's -m master, as the root's -u user (else the session `credentials` picks)."""
    options = root_options(ctx)
    if options.client is None:
        options.client = target.client(options.master, options.user)
    return options.client


def master_url_of(ctx: click.Context) -> str:
    """The -m master's URL, without logging in (for the commands that log in or out themselves)."""
    return target.master_url(root_options(ctx).master)


def user_flag_of(ctx: click.Context) -> str | None:
    """The root's -u user, if one was given."""
    return root_options(ctx).user


def format_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--json` and `--csv` (at most one): the command receives `fmt`, an `output.Format`."""

    @functools.wraps(func)
    def with_format(*args: Any, as_json: bool, as_csv: bool, **kwargs: Any) -> Any:
        if as_json and as_csv:
            raise InvalidRequest("give only one of --json and --csv")
        fmt = Format.JSON if as_json else Format.CSV if as_csv else Format.TABLE
        return func(*args, fmt=fmt, **kwargs)

    with_csv = click.option("--csv", "as_csv", is_flag=True, help="Print CSV (a header line, then one per row).")
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(with_csv(with_format))
