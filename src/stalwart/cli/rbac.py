"""`stalwart rbac ...`: roles (Determined's names) and who holds them: list-roles, describe-role, assign-role,
unassign-role, my-permissions, list-users-roles, list-groups-roles. Roles decide what users may do when the
master runs with `security.authz.type: rbac`."""

from __future__ import annotations

from typing import Any

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.workspaces import RoleAssignment, RoleAssignmentList, RoleList
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, Callback, client_of, format_options
from stalwart.client import Client


@click.group("rbac", cls=AliasedGroup)
def rbac() -> None:
    """Give, take back and list roles and permissions.

    A role (Determined's names: Viewer, Editor, WorkspaceAdmin, ClusterAdmin, ...) is a set of permissions, given
    to a user or a user group on one workspace or on the whole cluster. Roles decide what users may do when the
    master runs with `security.authz.type: rbac`."""


def _scope(a: RoleAssignment) -> str:
    return f"workspace {a.workspaceName}" if a.workspaceName else "the whole cluster"


def _assignment_rows(assignments: list[RoleAssignment]) -> list[tuple[Any, ...]]:
    return [(a.id, a.role, a.username or "", a.groupName or "", a.workspaceName or "(cluster)")
            for a in assignments]


ASSIGNMENT_COLUMNS = ["ID", "Role", "User", "Group", "Workspace"]


@rbac.command("list-roles")
@format_options
@click.pass_context
def list_roles(ctx: click.Context, fmt: output.Format) -> None:
    """List every role and the permissions it grants.

    A row per role: its name, where it can be given (a workspace, the cluster), its description and its
    permissions. `describe-role` shows one; `assign-role` gives one."""
    roles = client_of(ctx).list_roles()
    output.emit(fmt, ["Role", "Assignable on", "Description", "Permissions"],
                [(r.name, ", ".join(r.scopes), r.description, ", ".join(r.permissions)) for r in roles],
                json_data=RoleList(roles=roles))


@rbac.command("describe-role")
@click.argument("role")
@format_options
@click.pass_context
def describe_role(ctx: click.Context, role: str, fmt: output.Format) -> None:
    """Show one role's description and permissions.

    ROLE's description, where it can be given, and a row per permission it grants. `list-roles` shows them
    all."""
    r = client_of(ctx).get_role(role)
    if fmt is output.Format.JSON:
        output.print_json(r)
        return
    if fmt is output.Format.TABLE:
        output.console.print(f"{r.name}: {r.description} (assignable on: {', '.join(r.scopes)})")
    output.emit(fmt, ["Permission"], [(p,) for p in r.permissions])


def _who_options(func: Callback) -> Callback:
    func = click.option("-w", "--workspace-name", default=None,
                        help="On this workspace only (else on the whole cluster).")(func)
    func = click.option("-g", "--group-name-to-assign", "group_name", default=None, help="To this user group.")(func)
    return click.option("-u", "--username-to-assign", "username", default=None, help="To this user.")(func)


def _target(client: Client, username: str | None, group_name: str | None,
            workspace_name: str | None) -> dict[str, Any]:
    if (username is None) == (group_name is None):
        raise InvalidRequest("give exactly one of --username-to-assign and --group-name-to-assign")
    workspace_id = client.workspace_by_name(workspace_name).id if workspace_name is not None else None
    return {"username": username, "group_name": group_name, "workspace_id": workspace_id}


def _whom(username: str | None, group_name: str | None, workspace_name: str | None) -> str:
    who = f"user {username}" if username is not None else f"user group {group_name}"
    where = f"workspace {workspace_name}" if workspace_name is not None else "the whole cluster"
    return f"{who} on {where}"


@rbac.command("assign-role")
@click.argument("role")
@_who_options
@click.pass_context
def assign_role(ctx: click.Context, role: str, username: str | None, group_name: str | None,
                workspace_name: str | None) -> None:
    """Give a role to a user or a group, where it applies.

    ROLE goes to one user (--username-to-assign) or one user group (--group-name-to-assign), on one workspace
    (--workspace-name) or else on the whole cluster; its permissions apply from the next call. `unassign-role`
    takes it back."""
    client = client_of(ctx)
    client.assign_role(role, **_target(client, username, group_name, workspace_name))
    output.console.print(f"Assigned role {role} to {_whom(username, group_name, workspace_name)}.")


@rbac.command("unassign-role")
@click.argument("role")
@_who_options
@click.pass_context
def unassign_role(ctx: click.Context, role: str, username: str | None, group_name: str | None,
                  workspace_name: str | None) -> None:
    """Take a role back from a user or a group.

    The opposite of `assign-role`, with the same options: ROLE stops applying to that user or group on that
    workspace (--workspace-name) or on the whole cluster. A role given elsewhere, or through a group, stays."""
    client = client_of(ctx)
    client.unassign_role(role, **_target(client, username, group_name, workspace_name))
    output.console.print(f"Unassigned role {role} from {_whom(username, group_name, workspace_name)}.")


@rbac.command("my-permissions")
@format_options
@click.pass_context
def my_permissions(ctx: click.Context, fmt: output.Format) -> None:
    """Show your roles and what they let you do, and where.

    The access control mode, your roles, then your permissions on the whole
    cluster and in each workspace. `list-users-roles` shows another user's roles."""
    mine = client_of(ctx).my_permissions()
    if fmt is output.Format.JSON:
        output.print_json(mine)
        return
    rows = [("(cluster)", ", ".join(mine.cluster))] + [(w, ", ".join(p)) for w, p in sorted(mine.workspaces.items())]
    if fmt is output.Format.TABLE:
        admin = "; you are an admin: every permission everywhere" if mine.admin else ""
        output.console.print(f"Access control: {mine.mode}{admin}.")
        if mine.assignments:
            output.table(ASSIGNMENT_COLUMNS, _assignment_rows(mine.assignments), title="Your roles")
    output.emit(fmt, ["Where", "Permissions"], rows)


@rbac.command("list-users-roles")
@click.argument("username")
@format_options
@click.pass_context
def list_users_roles(ctx: click.Context, username: str, fmt: output.Format) -> None:
    """List the roles given to a user directly.

    The roles given to USERNAME itself, and where; roles it has through its groups are listed by
    `list-groups-roles`."""
    found = client_of(ctx).role_assignments(username=username)
    output.emit(fmt, ASSIGNMENT_COLUMNS, _assignment_rows(found), json_data=RoleAssignmentList(assignments=found))


@rbac.command("list-groups-roles")
@click.argument("group_name")
@format_options
@click.pass_context
def list_groups_roles(ctx: click.Context, group_name: str, fmt: output.Format) -> None:
    """List the roles given to a user group, and where.

    Each applies to every member of GROUP_NAME for as long as they are in it (`user-group describe` lists the
    members)."""
    found = client_of(ctx).role_assignments(group_name=group_name)
    output.emit(fmt, ASSIGNMENT_COLUMNS, _assignment_rows(found), json_data=RoleAssignmentList(assignments=found))
