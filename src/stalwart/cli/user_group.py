"""`stalwart user-group ...`: user groups (create, delete, list, describe, add-user, remove-user). A role given to a
group applies to each of its members for as long as they are in it."""

from __future__ import annotations

import click

from stalwart.api.models.workspaces import Group, GroupList
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options


@click.group("user-group", cls=AliasedGroup, aliases={"ls": "list"})
def user_group() -> None:
    """User groups: create, delete, list, describe, add-user, remove-user."""


def _members(g: Group) -> str:
    return ", ".join(g.members) if g.members else "no members"


@user_group.command("create")
@click.argument("name")
@click.option("--add-user", "add_users", multiple=True, metavar="USERNAME", help="A first member (repeatable).")
@click.pass_context
def create(ctx, name: str, add_users: tuple[str, ...]) -> None:
    """Create user group NAME (admins only)."""
    made = client_of(ctx).create_group(name, add_users=list(add_users))
    output.console.print(f"Created user group {made.name} ({_members(made)}).")


@user_group.command("delete")
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx, name: str, yes: bool) -> None:
    """Delete user group NAME (admins only): the roles given to it stop applying to its members."""
    client = client_of(ctx)
    client.get_group(name)  # an unknown group fails here, before the question
    if not yes and not click.confirm(f"Delete user group {name}?", default=False, err=True):
        output.console.print(f"Kept user group {name}.")
        return
    client.delete_group(name)
    output.console.print(f"Deleted user group {name}.")


@user_group.command("list")
@format_options
@click.pass_context
def list_(ctx, fmt: output.Format) -> None:
    """List the user groups."""
    groups = client_of(ctx).list_groups()
    output.emit(fmt, ["ID", "Name", "Members"], [(g.id, g.name, len(g.members)) for g in groups],
                json_data=GroupList(groups=groups))


@user_group.command("describe")
@click.argument("name")
@format_options
@click.pass_context
def describe(ctx, name: str, fmt: output.Format) -> None:
    """Show user group NAME and its members."""
    g = client_of(ctx).get_group(name)
    if fmt is output.Format.JSON:
        output.print_json(g)
        return
    output.emit(fmt, ["Group", "Member"], [(g.name, m) for m in g.members])
    if not g.members and fmt is output.Format.TABLE:
        output.info(f"User group {g.name} has no members.")


@user_group.command("add-user")
@click.argument("name")
@click.argument("usernames", nargs=-1, required=True)
@click.pass_context
def add_user(ctx, name: str, usernames: tuple[str, ...]) -> None:
    """Add users to group NAME (admins only)."""
    g = client_of(ctx).add_group_members(name, list(usernames))
    output.console.print(f"User group {g.name}: {_members(g)}.")


@user_group.command("remove-user")
@click.argument("name")
@click.argument("usernames", nargs=-1, required=True)
@click.pass_context
def remove_user(ctx, name: str, usernames: tuple[str, ...]) -> None:
    """Remove users from group NAME (admins only)."""
    g = client_of(ctx).remove_group_members(name, list(usernames))
    output.console.print(f"User group {g.name}: {_members(g)}.")
