"""/api/v1/groups and /api/v1/rbac: user groups, Determined's roles, who holds which, and one's own permissions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from stalwart.api import permissions as P
from stalwart.api.errors import NotFoundError
from stalwart.api.models.common import Empty
from stalwart.api.models.users import Username
from stalwart.api.models.workspaces import (
    AssignRole,
    CreateGroup,
    GroupEnvelope,
    GroupList,
    GroupMembers,
    MyPermissions,
    RoleAssignmentList,
    RoleEnvelope,
    RoleList,
)
from stalwart.master.identity import authz
from stalwart.master.queries import users as q, workspaces as wq
from stalwart.master.routes.common import identity, master
from stalwart.master.routes.contract import route
from stalwart.master.workspaces import people

router = APIRouter(prefix="/api/v1", tags=["rbac"])

GroupPath = Annotated[str, Path(min_length=1, max_length=128, description="a user group's name")]
RolePath = Annotated[str, Path(min_length=1, max_length=64, description="a role's name (`stalwart rbac list-roles`)")]
UserQuery = Annotated[Username | None, Query(description="only this user's own assignments")]
GroupQuery = Annotated[str | None, Query(max_length=128, description="only this group's assignments")]
WorkspaceQuery = Annotated[int | None, Query(ge=0, le=2**63 - 1, description="only those on this workspace")]



# -- user groups -----------------------------------------------------------------------------------------
@route(router, "GET", "/groups")
async def list_groups(request: Request) -> GroupList:
    with master(request).db.begin() as conn:
        return GroupList(groups=[people.group_view(conn, g) for g in wq.all_groups(conn)])


def _group(request: Request, name: str) -> GroupEnvelope:
    with master(request).db.begin() as conn:
        return GroupEnvelope(group=people.group_view(conn, people.get_group(conn, name)))


@route(router, "POST", "/groups")
async def create_group(request: Request, payload: CreateGroup) -> GroupEnvelope:
    people.create_group(master(request), payload.name, payload.addUsers)
    return _group(request, payload.name)


@route(router, "GET", "/groups/{group_name}")
async def get_group(request: Request, group_name: GroupPath) -> GroupEnvelope:
    return _group(request, group_name)


@route(router, "DELETE", "/groups/{group_name}")
async def delete_group(request: Request, group_name: GroupPath) -> Empty:
    people.delete_group(master(request), group_name)
    return Empty()


@route(router, "POST", "/groups/{group_name}/members")
async def add_members(request: Request, group_name: GroupPath, payload: GroupMembers) -> GroupEnvelope:
    people.change_members(master(request), group_name, payload.usernames, add=True)
    return _group(request, group_name)


@route(router, "DELETE", "/groups/{group_name}/members")
async def remove_members(request: Request, group_name: GroupPath, payload: GroupMembers) -> GroupEnvelope:
    people.change_members(master(request), group_name, payload.usernames, add=False)
    return _group(request, group_name)


# -- roles ---------------------------------------------------------------------------------------------------
@route(router, "GET", "/rbac/roles")
async def list_roles(request: Request) -> RoleList:
    return RoleList(roles=[people.role_view(r) for r in P.ROLES.values()])


@route(router, "GET", "/rbac/roles/{role}")
async def describe_role(request: Request, role: RolePath) -> RoleEnvelope:
    return RoleEnvelope(role=people.role_view(people.get_role(role)))


@route(router, "GET", "/rbac/assignments")
async def list_assignments(request: Request, username: UserQuery = None, groupName: GroupQuery = None,
                           workspaceId: WorkspaceQuery = None) -> RoleAssignmentList:
    with master(request).db.begin() as conn:
        user_id = group_id = None
        if username is not None:
            user = q.by_name(conn, username)
            if user is None:
                raise NotFoundError(f"user {username} not found")
            user_id = user["id"]
        if groupName is not None:
            group_id = people.get_group(conn, groupName)["id"]
        rows = wq.assignments(conn, user_id=user_id, group_id=group_id, workspace_id=workspaceId)
        return RoleAssignmentList(assignments=[people.assignment_view(r) for r in rows])


def _may_assign(request: Request, payload: AssignRole) -> None:
    """Assigning on a workspace needs assign_roles there (a WorkspaceAdmin of it); on the cluster, everywhere."""
    m = master(request)
    target = None
    if payload.workspaceId is not None:
        target = authz.Target(f"workspace {payload.workspaceId}", None, payload.workspaceId)
    authz.require(m, identity(request), P.ASSIGN_ROLES, target)


@route(router, "POST", "/rbac/assignments")
async def assign_role(request: Request, payload: AssignRole) -> RoleAssignmentList:
    _may_assign(request, payload)
    rows = people.assign(master(request), payload.role, payload.username, payload.groupName, payload.workspaceId)
    return RoleAssignmentList(assignments=[people.assignment_view(r) for r in rows])


@route(router, "POST", "/rbac/unassignments")
async def unassign_role(request: Request, payload: AssignRole) -> RoleAssignmentList:
    _may_assign(request, payload)
    rows = people.unassign(master(request), payload.role, payload.username, payload.groupName, payload.workspaceId)
    return RoleAssignmentList(assignments=[people.assignment_view(r) for r in rows])


@route(router, "GET", "/rbac/my-permissions")
async def my_permissions(request: Request) -> MyPermissions:
    """The caller's roles and what they allow: on the whole cluster, and per workspace (by name)."""
    m, ident = master(request), identity(request)
    with m.db.begin() as conn:
        rows = wq.assignments(conn, user_id=ident.user_id)
        for group in wq.groups_of_user(conn, ident.user_id):
            rows += wq.assignments(conn, group_id=group["id"])
        spaces = wq.all_workspaces(conn)
    cluster = sorted(p.name for p in P.REGISTRY.values() if authz.allowed(m, ident, p))
    per_ws: dict[str, list[str]] = {}
    for ws in spaces:
        target = authz.Target(f"workspace {ws['name']}", None, ws["id"])
        names = sorted(p.name for p in P.REGISTRY.values()
                       if p not in P.ACCOUNT and authz.allowed(m, ident, p, target))
        if names:
            per_ws[ws["name"]] = names
    return MyPermissions(mode=authz.mode(m), admin=ident.admin, assignments=[people.assignment_view(r) for r in rows],
                         cluster=cluster, workspaces=per_ws)
