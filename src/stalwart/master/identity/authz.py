"""Who may do what: `require(m, identity, permission, target)`, the one permission check of the master.

Every user route names its permission in the route table; `routes/contract` calls `check_route` for it before
the handler runs, finding the object the path names (an experiment, trial, command, job, workspace, project,
user or token): its owner and its workspace (a `Target`). A handler whose objects are in the body (deleting
checkpoints, the project an experiment is created in) or whose call needs a second permission (making someone
an admin) calls `require` itself. A refusal is a 403 naming the permission.

Two modes (`security.authz.type` in the master config):
- `basic` (the default): admins may do everything; others what the permission's rule allows
  (api/permissions.py: anyone, the owner, admins only).
- `rbac`: admins may do everything; every active user keeps the account permissions (`permissions.ACCOUNT`,
  by their basic rules); everything else needs a role (`permissions.ROLES`) assigned to the user or to a group
  of theirs, on the whole cluster or on the target's workspace. Role assignments are cached per user and the
  cache is cleared with the session cache on every change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import ForbiddenError, NotFoundError
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import users as q, workspaces as wq
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master

BASIC, RBAC = "basic", "rbac"


@dataclass(frozen=True)
class Target:
    """What a call acts on: in words ('experiment 5'), its owner, and the workspace it is in (None: none)."""

    what: str
    owner: str | None = None
    workspace_id: int | None = None


def mode(m: Master) -> str:
    return m.settings.cluster.security.authz_type


def roles_of(m: Master, ident: Identity) -> list[tuple[str, int | None]]:
    """The caller's roles (its own and its groups'), each with its workspace (None: the whole cluster)."""
    cache: dict[int, list[tuple[str, int | None]]] = m.roles_cache
    found = cache.get(ident.user_id)
    if found is None:
        with m.db.begin() as conn:
            found = wq.roles_of_user(conn, ident.user_id)
        cache[ident.user_id] = found
    return found


def _by_roles(m: Master, ident: Identity, permission: P.Permission, workspace_id: int | None,
              anywhere: bool = False) -> bool:
    for role_name, scope in roles_of(m, ident):
        role = P.ROLES.get(role_name)
        if role is None or permission not in role.permissions:
            continue
        if scope is None or anywhere or (workspace_id is not None and scope == workspace_id):
            return True
    return False


def _by_rule(ident: Identity, permission: P.Permission, target: Target | None) -> bool:
    if permission.basic is P.Rule.ANYONE:
        return True
    return (permission.basic is P.Rule.OWNER and target is not None and target.owner is not None
            and target.owner == ident.username)


def allowed(m: Master, ident: Identity, permission: P.Permission, target: Target | None = None) -> bool:
    """May this identity use `permission` on `target` (None: on nothing in particular, i.e. the whole cluster)?"""
    if ident.admin:
        return True
    if mode(m) != RBAC or permission in P.ACCOUNT:
        return _by_rule(ident, permission, target)
    workspace = None if permission in P.CLUSTER_ONLY or target is None else target.workspace_id
    return _by_roles(m, ident, permission, workspace)


def allowed_somewhere(m: Master, ident: Identity, permission: P.Permission) -> bool:
    """May this identity use `permission` on anything at all (on its own things, or in some workspace)? The
    route-level check of calls whose target is in their body: the handler then checks the real target."""
    if ident.admin:
        return True
    if mode(m) != RBAC or permission in P.ACCOUNT:
        return permission.basic is not P.Rule.ADMIN
    return _by_roles(m, ident, permission, None, anywhere=permission not in P.CLUSTER_ONLY)


def require(m: Master, ident: Identity, permission: P.Permission, target: Target | None = None) -> None:
    """Refuse (403, naming the permission) unless `ident` may use `permission` on `target`."""
    if allowed(m, ident, permission, target):
        return
    raise ForbiddenError(refusal(m, ident, permission, target))


def refusal(m: Master, ident: Identity, permission: P.Permission, target: Target | None) -> str:
    head = f"permission denied: {ident.username} lacks {permission.name} ({permission.description})"
    if mode(m) == RBAC and permission not in P.ACCOUNT:
        roles = ", ".join(sorted(r.name for r in P.ROLES.values() if permission in r.permissions))
        where = ("on the whole cluster" if permission in P.CLUSTER_ONLY or target is None
                 or target.workspace_id is None else f"on workspace {_workspace_name(m, target.workspace_id)}")
        on = f" on {target.what}" if target is not None else ""
        return f"{head}{on}: it needs one of the roles {roles} {where} (`stalwart rbac my-permissions`)"
    if permission.basic is P.Rule.ADMIN:
        return f"{head}: only admins have it"
    if target is not None and target.owner is not None:
        return f"{head}: {target.what} belongs to {target.owner}; only its owner or an admin may do this"
    return f"{head}: only the owner or an admin has it"


def _workspace_name(m: Master, workspace_id: int) -> str:
    with m.db.begin() as conn:
        ws = wq.workspace(conn, workspace_id)
    return ws["name"] if ws is not None else str(workspace_id)


# -- the objects a path names ----------------------------------------------------------------------
def _user_target(conn: Conn, name: str) -> Target | None:
    return Target(f"user {name}", name) if q.by_name(conn, name) is not None else None


def _token_target(conn: Conn, token_id: int) -> Target | None:
    row = q.token(conn, token_id)
    return Target(f"token {token_id}", row["username"]) if row is not None else None


def _owned(what: str, find: Callable[[Conn, Any], tuple[str, int] | None]) -> Callable[[Conn, Any], Target | None]:
    def target(conn: Conn, key: Any) -> Target | None:
        found = find(conn, key)
        return Target(f"{what} {key}", found[0], found[1]) if found is not None else None
    return target


_TARGETS: tuple[tuple[str, str, bool, Callable[[Conn, Any], Target | None]], ...] = (
    ("exp_id", "experiment", True, _owned("experiment", wq.experiment_place)),
    ("trial_id", "trial", True, _owned("trial", wq.trial_place)),
    ("cmd_id", "command", True, _owned("command", wq.command_place)),
    ("job_id", "job", False, _owned("job", wq.job_place)),
    ("project_id", "project", True, _owned("project", wq.project_place)),
    ("workspace_id", "workspace", True, _owned("workspace", wq.workspace_place)),
    ("username", "user", False, _user_target),
    ("token_id", "token", True, _token_target),
)
"""Path values that name an object: the value's name, what it names, whether it is an integer id, how to find it."""

CHECKED_BY_HANDLER = frozenset({
    ("GET", "/api/v1/tokens"), ("POST", "/api/v1/tokens"), ("DELETE", "/api/v1/checkpoints"),
    ("POST", "/api/v1/experiments"), ("POST", "/api/v1/commands"), ("POST", "/api/v1/rbac/assignments"),
    ("POST", "/api/v1/rbac/unassignments")})
"""Routes whose permission needs an object their path does not name: they act on the caller's own, or on what
their body names, and their handlers check it. `routes/contract` refuses to register any other route whose
permission is owner-ruled (or workspace-scoped) and whose path names nothing, so one cannot slip through."""


def target_key_in(path: str) -> bool:
    """Does a route path name an object `check_route` can find?"""
    return any("{" + key + "}" in path for key, _, _, _ in _TARGETS)


def target_of(path_params: Mapping[str, Any]) -> str | None:
    """What a call acts on, in words (for the audit log): 'experiment 5'."""
    for key, what, _, _ in _TARGETS:
        if key in path_params:
            return f"{what} {path_params[key]}"
    if path_params:
        return ", ".join(f"{k}={v}" for k, v in path_params.items())
    return None


def check_route(m: Master, ident: Identity, permission: P.Permission, path_params: Mapping[str, Any]) -> None:
    """The route-level check: `permission` on the object the path names (404 when there is none); on a route
    naming none, `permission` on the cluster, or anywhere for the routes whose handlers check their target."""
    if ident.admin:
        return
    target = _path_target(m, path_params)
    if target is not None:
        require(m, ident, permission, target)
    elif not allowed_somewhere(m, ident, permission):
        raise ForbiddenError(refusal(m, ident, permission, None))


def _path_target(m: Master, path_params: Mapping[str, Any]) -> Target | None:
    for key, what, numeric, find in _TARGETS:
        if key not in path_params:
            continue
        value: Any = path_params[key]
        if numeric:
            try:
                value = int(value)
            except ValueError:
                return None  # not an id: the route's own validation answers 400
        with m.db.begin() as conn:
            target = find(conn, value)
        if target is None:
            raise NotFoundError(f"{what} {value} not found")
        return target
    return None


def experiment_targets(m: Master, experiments: list[dict[str, Any]]) -> dict[int, Target]:
    """Targets of listed experiments (by id), their workspaces read in one query when roles need them."""
    places: dict[int, int] = {}
    if mode(m) == RBAC:
        with m.db.begin() as conn:
            places = wq.workspaces_of_experiments(conn, [int(e["id"]) for e in experiments])
    return {int(e["id"]): Target(f"experiment {e['id']}", e.get("owner"), places.get(int(e["id"])))
            for e in experiments}


def viewable_workspaces(m: Master, ident: Identity, permission: P.Permission) -> set[int] | None:
    """The workspaces whose objects `ident` may use `permission` on; None: all of them (basic mode, admins,
    a role on the whole cluster)."""
    if ident.admin or mode(m) != RBAC or permission in P.ACCOUNT:
        return None
    scopes = {scope for name, scope in roles_of(m, ident)
              if (role := P.ROLES.get(name)) is not None and permission in role.permissions}
    if None in scopes:
        return None
    return {s for s in scopes if s is not None}


def require_checkpoints(m: Master, ident: Identity, permission: P.Permission, uuids: list[str]) -> None:
    """`permission` on every checkpoint named (those that do not exist are left to the caller's 404)."""
    if ident.admin:
        return
    with m.db.begin() as conn:
        places = wq.checkpoint_places(conn, uuids)
    for uuid, (owner, workspace_id) in places.items():
        require(m, ident, permission, Target(f"checkpoint {uuid}", owner, workspace_id))
