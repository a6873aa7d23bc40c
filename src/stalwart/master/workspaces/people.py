"""User groups and role assignments: who holds which role, on the cluster or on one workspace.

Every change clears the permission caches (`sessions.forget_all`), so it applies from the next call on.
"""

from __future__ import annotations

import time

from stalwart.api import permissions as P
from stalwart.api.errors import ConfigError, InvalidRequest, InvalidStateError, NotFoundError
from stalwart.api.models.workspaces import Group, Role, RoleAssignment
from stalwart.master.identity import sessions
from stalwart.master.queries import users as q, workspaces as wq
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master


def get_group(conn: Conn, name: str) -> Row:
    group = wq.group_by_name(conn, name)
    if group is None:
        raise NotFoundError(f"user group {name} not found (see `stalwart user-group list`)")
    return group


def _user(conn: Conn, username: str) -> Row:
    user = q.by_name(conn, username)
    if user is None:
        raise NotFoundError(f"user {username} not found (see `stalwart user list`)")
    return user


def group_view(conn: Conn, group: Row) -> Group:
    return Group(id=group["id"], name=group["name"], members=wq.members(conn, group["id"]),
                 createdAt=group["created_at"])


def create_group(m: Master, name: str, usernames: list[str]) -> None:
    with m.db.begin() as conn:
        if wq.group_by_name(conn, name) is not None:
            raise InvalidStateError(f"user group {name} already exists")
        users = [_user(conn, u) for u in usernames]
        group_id = wq.insert_group(conn, name, time.time())
        for user in users:
            wq.add_member(conn, group_id, user["id"])
    sessions.forget_all(m)


def delete_group(m: Master, name: str) -> None:
    with m.db.begin() as conn:
        wq.delete_group(conn, get_group(conn, name)["id"])
    sessions.forget_all(m)


def change_members(m: Master, name: str, usernames: list[str], *, add: bool) -> None:
    with m.db.begin() as conn:
        group = get_group(conn, name)
        for user in [_user(conn, u) for u in usernames]:
            (wq.add_member if add else wq.remove_member)(conn, group["id"], user["id"])
    sessions.forget_all(m)


def role_view(role: P.Role) -> Role:
    return Role(name=role.name, description=role.description, permissions=sorted(p.name for p in role.permissions),
                scopes=["cluster", "workspace"] if role.workspace_scoped else ["cluster"])


def get_role(name: str) -> P.Role:
    role = P.ROLES.get(name)
    if role is None:
        raise NotFoundError(f"role {name} not found; the roles are {', '.join(P.ROLES)}")
    return role


def assignment_view(row: Row) -> RoleAssignment:
    return RoleAssignment(id=row["id"], role=row["role"], username=row["username"], groupName=row["group_name"],
                          workspaceId=row["workspace_id"], workspaceName=row["workspace_name"],
                          createdAt=row["created_at"])


def _who(conn: Conn, username: str | None, group_name: str | None) -> tuple[int | None, int | None]:
    if (username is None) == (group_name is None):
        raise InvalidRequest("give exactly one of username and groupName (who gets the role)")
    if username is not None:
        return _user(conn, username)["id"], None
    assert group_name is not None
    return None, get_group(conn, group_name)["id"]


def assign(m: Master, role_name: str, username: str | None, group_name: str | None,
           workspace_id: int | None) -> list[Row]:
    """Assign a role (409 in basic mode, where roles decide nothing); the assignments it made or found."""
    role = get_role(role_name)
    if m.settings.cluster.security.authz_type != "rbac":
        raise InvalidStateError(
            f"not assigned: this master decides permissions in basic mode (security.authz.type is "
            f"{m.settings.cluster.security.authz_type}), where roles have no effect. Turn RBAC on first: set "
            f"`security: {{authz: {{type: rbac}}}}` in the master config and restart the master (`stalwart down`, "
            f"then `stalwart up --config FILE` for the local cluster), then assign {role.name}")
    if workspace_id is not None and not role.workspace_scoped:
        raise InvalidRequest(f"role {role.name} is assigned on the whole cluster only (leave out the workspace)")
    with m.db.begin() as conn:
        if workspace_id is not None and wq.workspace(conn, workspace_id) is None:
            raise NotFoundError(f"workspace {workspace_id} not found")
        user_id, group_id = _who(conn, username, group_name)
        held = wq.assignments(conn, user_id=user_id, group_id=group_id, workspace_id=workspace_id,
                              role=role.name, scoped=True)
        if not held:
            wq.insert_assignment(conn, role=role.name, user_id=user_id, group_id=group_id,
                                 workspace_id=workspace_id, created_at=time.time())
        out = wq.assignments(conn, user_id=user_id, group_id=group_id, workspace_id=workspace_id,
                             role=role.name, scoped=True)
    sessions.forget_all(m)
    return out


def unassign(m: Master, role_name: str, username: str | None, group_name: str | None,
             workspace_id: int | None) -> list[Row]:
    get_role(role_name)
    with m.db.begin() as conn:
        user_id, group_id = _who(conn, username, group_name)
        held = wq.assignments(conn, user_id=user_id, group_id=group_id, workspace_id=workspace_id,
                              role=role_name, scoped=True)
        if not held:
            where = f"workspace {workspace_id}" if workspace_id is not None else "the cluster"
            raise NotFoundError(f"{username or group_name} holds no role {role_name} on {where}")
        for row in held:
            wq.delete_assignment(conn, row["id"])
    sessions.forget_all(m)
    return held


def refuse_silent_basic(m: Master) -> None:
    """A master must not fall back to basic mode by itself while role assignments exist (a restart without its
    rbac config would switch access control off): ConfigError unless `security.authz.type: basic` is explicit."""
    security = m.settings.cluster.security
    if security.authz_type == "rbac" or security.authz_explicit:
        return
    with m.db.begin() as conn:
        count = wq.count_assignments(conn)
    if count:
        raise ConfigError(
            f"refusing to start in basic mode: the database holds {count} role assignment(s) (RBAC was on), but "
            f"this master's config does not set security.authz.type, so it would fall back to basic mode and "
            f"switch access control off. Start it with its rbac config (security: {{authz: {{type: rbac}}}}; the "
            f"local cluster: `stalwart up --config FILE`), or set security.authz.type: basic explicitly to switch "
            f"RBAC off (the assignments are kept but decide nothing)")
