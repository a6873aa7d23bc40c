"""`stalwart user-group ...`: user groups (create, delete, list, describe, add-user, remove-user). A role given to a
group applies to each of its members for as long as they are in it."""

from __future__ import annotations

import click

from stalwart.api.models.workspaces import Group, GroupList
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options


@click.group("user-group", cls=AliasedGroup, aliases={"ls": "list"})
def user_group() -> None:
    """Create groups of users and change who is in them.

    A role given to a group (`rbac assign-role -g NAME`) applies to each of its members for as long as they are in
    it."""


def _members(g: Group) -> str:
    return ", ".join(g.members) if g.members else "no members"


@user_group.command("create")
@click.argument("name")
@click.option("--add-user", "add_users", multiple=True, metavar="USERNAME", help="A first member (repeatable).")
@click.pass_context
def create(ctx: click.Context, name: str, add_users: tuple[str, ...]) -> None:
    """Create a group to give roles to several users at once.

    Admins only. Group NAME starts with the --add-user members (or none); `add-user` adds more, and
    `rbac assign-role ROLE -g NAME` gives it a role."""
    made = client_of(ctx).create_group(name, add_users=list(add_users))
    output.console.print(f"Created user group {made.name} ({_members(made)}).")


@user_group.command("delete")
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx: click.Context, name: str, yes: bool) -> None:
    """Delete a group; the roles given to it stop applying.

    Admins only. Group NAME goes, with the roles given to it: its members keep only the roles given to them
    otherwise. The users themselves stay. It asks first unless --yes."""
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
def list_(ctx: click.Context, fmt: output.Format) -> None:
    """List the user groups and how many members each has.

    A row per group: id, name and member count. `describe` names a group's members."""
    groups = client_of(ctx).list_groups()
    output.emit(fmt, ["ID", "Name", "Members"], [(g.id, g.name, len(g.members)) for g in groups],
                json_data=GroupList(groups=groups))


@user_group.command("describe")
@click.argument("name")
@format_options
@click.pass_context
def describe(ctx: click.Context, name: str, fmt: output.Format) -> None:
    """List the members of one user group.

    A row per member of group NAME. `rbac list-groups-roles NAME` shows the roles it gives them."""
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
def add_user(ctx: click.Context, name: str, usernames: tuple[str, ...]) -> None:
    """Add users to a group: they get the group's roles.

    Admins only. Each of USERNAMES joins group NAME and holds its roles from the next call on; the members are
    printed. `remove-user` is the opposite."""
    g = client_of(ctx).add_group_members(name, list(usernames))
    output.console.print(f"User group {g.name}: {_members(g)}.")


@user_group.command("remove-user")
@click.argument("name")
@click.argument("usernames", nargs=-1, required=True)
@click.pass_context
def remove_user(ctx: click.Context, name: str, usernames: tuple[str, ...]) -> None:
    """Take users out of a group, and its roles from them.

    Admins only. Each of USERNAMES leaves group NAME and loses the roles it had only through the group; the
    members left are printed. `add-user` is the opposite."""
    g = client_of(ctx).remove_group_members(name, list(usernames))
    output.console.print(f"User group {g.name}: {_members(g)}.")
