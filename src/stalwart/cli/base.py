"""Click plumbing shared by every command: aliases, the --master option, and one-line errors."""

from __future__ import annotations

import click

from stalwart.cli import target
from stalwart.client import Client


class AliasedGroup(click.Group):
    """A group whose commands also answer to short aliases (`e` for `experiment`, `ls` for `list`)."""

    def __init__(self, *args, aliases: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.aliases = aliases or {}

    def get_command(self, ctx: click.Context, cmd_name: str):
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(self, ctx: click.Context, args: list[str]):
        _name, cmd, rest = super().resolve_command(ctx, args)
        return cmd.name if cmd else None, cmd, rest


def client_of(ctx: click.Context) -> Client:
    root = ctx.find_root()
    obj = root.obj or {}
    if "client" not in obj:
        obj["client"] = target.client(obj.get("master"))
        root.obj = obj
    return obj["client"]


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
