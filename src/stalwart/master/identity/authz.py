"""Who may do what: `require(m, identity, permission, target)`, the one permission check of the master.

Every user route names its permission and its scope in the route table (`api.auth_kinds.Scope`); `routes/contract`
calls `check_route` before the handler runs. By the scope it checks the permission on every object the path (or,
for the few routes that name it there, the query) names: an experiment, trial, checkpoint, command or task, job,
workspace, project, user or token, found with its owner and its workspace (a `Target`; `FINDERS`); or on the whole
cluster; or, for listings and one's own things, anywhere: the handler then shows only what the caller may see
(`viewable_workspaces`); a call whose objects are in its body is checked by its handler, on each (`require`).
A refusal is a 403 naming the permission and the roles (and where) that would grant it. `check_declaration`
refuses to register a route whose scope the check could not decide (a path value naming an object no finder knows,
a workspace permission checked on the cluster), and the authorization conformance suite calls every route as each
kind of caller.

A task's credential (the owner session a trial or command holds, kind `task`) has its owner's permissions less
`permissions.NOT_FOR_TASKS`, whoever the owner is, and dies with the allocation.

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
from stalwart.api.auth_kinds import PATH_VALUES, PathValue, Scope
from stalwart.api.errors import ForbiddenError, NotFoundError
from stalwart.api.models.common import MAX_ID
from stalwart.api.routes_table import RouteSpec
from stalwart.api.states import TASK_KINDS, AllocationState
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import (
    models_registry,
    runs,
    templates as tq,
    trials,
    users as q,
    webhooks as hq,
    workspaces as wq,
)
from stalwart.master.queries.rows import Conn, Row
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


TASK = "task"
"""The session kind of a task's credential (identity.sessions.task_session)."""


def _task_may_not(ident: Identity, permission: P.Permission) -> bool:
    return ident.kind == TASK and permission in P.NOT_FOR_TASKS


def allowed(m: Master, ident: Identity, permission: P.Permission, target: Target | None = None) -> bool:
    """May this identity use `permission` on `target` (None: on nothing in particular, i.e. the whole cluster)?"""
    if _task_may_not(ident, permission):
        return False
    if ident.admin:
        return True
    if mode(m) != RBAC or permission in P.ACCOUNT:
        return _by_rule(ident, permission, target)
    workspace = None if permission in P.CLUSTER_ONLY or target is None else target.workspace_id
    return _by_roles(m, ident, permission, workspace)


def allowed_somewhere(m: Master, ident: Identity, permission: P.Permission) -> bool:
    """May this identity use `permission` on anything at all (on its own things, or in some workspace)? The
    route-level check of calls whose target is in their body: the handler then checks the real target."""
    if _task_may_not(ident, permission):
        return False
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
    if _task_may_not(ident, permission):
        return (f"{head}: a task's credential never has it, whoever owns the task (it changes identity or the "
                "cluster); do this as the user, outside the task")
    if mode(m) == RBAC and permission not in P.ACCOUNT:
        on = f" on {target.what}" if target is not None else ""
        return f"{head}{on}: {_who_may(m, permission, target)} (`stalwart rbac my-permissions`)"
    if permission.basic is P.Rule.ADMIN:
        return f"{head}: only admins have it"
    if target is not None and target.owner is not None:
        return f"{head}: {target.what} belongs to {target.owner}; only its owner or an admin may do this"
    return f"{head}: only the owner or an admin has it"


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _who_may(m: Master, permission: P.Permission, target: Target | None) -> str:
    """The roles that would grant `permission` here, each with the scope it must be assigned on: 'Editor or
    WorkspaceAdmin on workspace vision, or ClusterAdmin on the whole cluster'."""
    granting = [r for r in P.ROLES.values() if permission in r.permissions]
    on_cluster = sorted(r.name for r in granting if not r.workspace_scoped or permission in P.CLUSTER_ONLY)
    on_workspace = sorted(r.name for r in granting if r.workspace_scoped and permission not in P.CLUSTER_ONLY)
    if target is not None and target.workspace_id is not None:
        here = f"on workspace {_workspace_name(m, target.workspace_id)}"
    else:
        here = "on the workspace it acts in"
    parts = [f"{_names(on_workspace)} {here}"] if on_workspace else []
    if on_cluster:
        parts.append(f"{_names(on_cluster)} on the whole cluster")
    return "it needs the role " + ", or ".join(parts)


def _workspace_name(m: Master, workspace_id: int) -> str:
    with m.db.begin() as conn:
        ws = wq.workspace(conn, workspace_id)
    return ws["name"] if ws is not None else str(workspace_id)


# -- the objects a route names ---------------------------------------------------------------------
Finder = Callable[[Conn, Any], "Target | None"]


def _user_target(conn: Conn, name: str) -> Target | None:
    return Target(f"user {name}", name) if q.by_name(conn, name) is not None else None


def _token_target(conn: Conn, token_id: int) -> Target | None:
    row = q.token(conn, token_id)
    return Target(f"token {token_id}", row["username"]) if row is not None else None


def _checkpoint_target(conn: Conn, uuid: str) -> Target | None:
    found = wq.checkpoint_places(conn, [uuid]).get(uuid)
    return Target(f"checkpoint {uuid}", found[0], found[1]) if found is not None else None


def _webhook_target(conn: Conn, webhook_id: int) -> Target | None:
    """A workspace's webhook is checked on its workspace; the cluster's (no workspace) on the cluster."""
    found = hq.place(conn, webhook_id)
    return Target(f"webhook {webhook_id}", found[0], found[1]) if found is not None else None


def _owned(what: str, find: Callable[[Conn, Any], tuple[str, int] | None]) -> Finder:
    def target(conn: Conn, key: Any) -> Target | None:
        found = find(conn, key)
        return Target(f"{what} {key}", found[0], found[1]) if found is not None else None
    return target


def _int_id(raw: Any) -> int | None:
    text = str(raw)
    return int(text) if text.isascii() and text.isdigit() and len(text) < 20 and int(text) <= MAX_ID else None


def _task_id(raw: Any) -> int | None:
    """A task id ('notebook-3', 'command-3' or '3') as its row's id; None for what is no task id."""
    kind, _, number = str(raw).rpartition("-")
    return _int_id(number) if kind in ("", *TASK_KINDS) else None


@dataclass(frozen=True)
class _Kind:
    what: str  # in words: 'experiment'
    parse: Callable[[Any], Any]  # the path value as the finder's key; None: it names nothing (the route answers)
    find: Finder


FINDERS: dict[str, _Kind] = {
    "exp_id": _Kind("experiment", _int_id, _owned("experiment", wq.experiment_place)),
    "trial_id": _Kind("trial", _int_id, _owned("trial", wq.trial_place)),
    "uuid": _Kind("checkpoint", str, _checkpoint_target),
    "cmd_id": _Kind("command", _int_id, _owned("command", wq.command_place)),
    "task_id": _Kind("task", _task_id, _owned("task", wq.command_place)),  # any kind: command-3, notebook-4, 5
    "notebook_id": _Kind("notebook", _int_id, _owned("notebook", wq.command_place)),
    "tensorboard_id": _Kind("TensorBoard", _int_id, _owned("TensorBoard", wq.command_place)),
    "shell_id": _Kind("shell", _int_id, _owned("shell", wq.command_place)),
    "job_id": _Kind("job", str, _owned("job", wq.job_place)),
    "project_id": _Kind("project", _int_id, _owned("project", wq.project_place)),
    "workspace_id": _Kind("workspace", _int_id, _owned("workspace", wq.workspace_place)),
    "model_name": _Kind("model", str, _owned("model", models_registry.model_place)),  # by name, or id if all digits
    "username": _Kind("user", str, _user_target),
    "token_id": _Kind("token", _int_id, _token_target),
    "webhook_id": _Kind("webhook", _int_id, _webhook_target),
    "template_name": _Kind("template", str, _owned("template", tq.place)),
}
"""How to find the object each path value that names one stands for: every workspace and account object of
`api.auth_kinds.PATH_VALUES` (the master refuses to start when one is missing here)."""

_NAMED = {PathValue.WORKSPACE_OBJECT, PathValue.ACCOUNT_OBJECT}
_MISSING = {k for k, v in PATH_VALUES.items() if v in _NAMED} ^ set(FINDERS)
if _MISSING:
    raise RuntimeError(f"identity.authz.FINDERS and api.auth_kinds.PATH_VALUES disagree on {sorted(_MISSING)}")


def _ui_events_objects(query: Mapping[str, str]) -> list[tuple[str, str]]:
    """The web UI's live updates name their page's object in the query: `page=experiment&id=5`, `page=trial&id=7`;
    the other pages are listings (their models show only what the caller may see)."""
    key = {"experiment": "exp_id", "trial": "trial_id"}.get(query.get("page", ""))
    ident = query.get("id")
    return [(key, ident)] if key is not None and ident is not None else []


QUERY_OBJECTS: dict[tuple[str, str], Callable[[Mapping[str, str]], list[tuple[str, str]]]] = {
    ("GET", "/api/v1/ui/events"): _ui_events_objects,
}
"""Routes of scope `query`: which of their query values name which objects (as path values would)."""


MANAGED_LISTS = {("GET", "/api/v1/webhooks")}
"""Listings of what the caller may manage, checked by a managing permission (anywhere) rather than a reading one:
the handler shows only the objects of the workspaces where the caller holds it."""


def check_declaration(spec: RouteSpec) -> None:
    """Refuse (ValueError) a user route whose scope does not fit its path and permission: one the check could
    not decide, so nothing it reads goes unchecked. `routes/contract` calls it for every user route it registers."""
    permission, scope = spec.permission, spec.scope
    where = f"{spec.method} {spec.path}"
    if permission is None or scope is None:
        raise ValueError(f"{where}: a user route needs a permission and a scope")
    named = [v for v in spec.path_values if PATH_VALUES[v] in _NAMED]
    if named and scope is not Scope.PATH:
        raise ValueError(f"{where}: its path names {named}, so its scope is `path`, not `{scope.value}`")
    problem = {
        Scope.PATH: None if named else "its scope is `path` but its path names no object",
        Scope.QUERY: None if spec.key in QUERY_OBJECTS else "its scope is `query` but identity.authz.QUERY_OBJECTS "
                                                            "does not say which query values name what",
        Scope.CLUSTER: None if permission in P.CLUSTER_ONLY or (permission in P.ACCOUNT
                                                                and permission.basic is P.Rule.ANYONE)
        else f"{permission.name} may be granted on one workspace, so it cannot be checked on the whole cluster",
        Scope.OWN: None if permission in P.ACCOUNT else f"{permission.name} is not an account permission",
        Scope.LIST: None if permission.basic is P.Rule.ANYONE or spec.key in MANAGED_LISTS
        else f"{permission.name} is not a reading permission",
        Scope.BODY: None,
    }[scope]
    if problem is not None:
        raise ValueError(f"{where}: {problem}")


def target_of(path_params: Mapping[str, Any]) -> str | None:
    """What a call acts on, in words (for the audit log): 'experiment 5'."""
    for key, value in path_params.items():
        kind = FINDERS.get(key)
        if kind is not None:
            parsed = kind.parse(value)
            return f"{kind.what} {parsed if parsed is not None else value}"
    if path_params:
        return ", ".join(f"{k}={v}" for k, v in path_params.items())
    return None


def check_route(m: Master, ident: Identity, spec: RouteSpec, path_params: Mapping[str, Any],
                query: Mapping[str, str]) -> None:
    """The route-level check of `spec.permission` by the route's scope: on every object its path (or query) names
    (404 when one names nothing); on the cluster; for listings and one's own things, anywhere (the handler then
    shows only what the caller may see); for a body's objects, only what no workspace role could change (a task's
    credential's limits; basic mode's rules; a cluster-only permission): the handler checks each object the body
    names, so its refusal names the workspace where a role would allow it."""
    permission, scope = spec.permission, spec.scope
    assert permission is not None and scope is not None  # check_declaration holds for every registered route
    if ident.admin and ident.kind != TASK:
        return  # admins may do everything; the handler answers 404 for what names nothing
    if scope is Scope.PATH or scope is Scope.QUERY:
        named = list(path_params.items()) if scope is Scope.PATH else QUERY_OBJECTS[spec.key](query)
        targets = _targets(m, named)
        for target in targets:
            require(m, ident, permission, target)
        if targets:
            return
    if scope is Scope.BODY:  # the handler checks each object the body names: its refusal says where
        decided_here = mode(m) != RBAC or permission in P.CLUSTER_ONLY  # no role on one workspace can grant it
        if _task_may_not(ident, permission) or (decided_here and not allowed_somewhere(m, ident, permission)):
            raise ForbiddenError(refusal(m, ident, permission, None))
    elif scope is Scope.CLUSTER:
        require(m, ident, permission, None)
    elif not allowed_somewhere(m, ident, permission):
        raise ForbiddenError(refusal(m, ident, permission, None))


def require_live_allocation(m: Master, allocation_id: str) -> Row:
    """The caller's allocation, which must not have ended: an allocation's token dies with it (403)."""
    with m.db.begin() as conn:
        alloc = runs.find(conn, allocation_id)
    if alloc is None or alloc["state"] == AllocationState.TERMINATED.value:
        raise ForbiddenError(f"allocation {allocation_id} has ended: its token is no longer accepted")
    return alloc


def check_allocation_reads(m: Master, allocation_id: str, path_params: Mapping[str, Any]) -> None:
    """A user route a trial may call with its allocation token (the Core API's best-validation read): only while
    the allocation lives, and only on the allocation's own experiment (what its searcher may read)."""
    alloc = require_live_allocation(m, allocation_id)
    with m.db.begin() as conn:
        trial = trials.find(conn, alloc["trial_id"]) if alloc["trial_id"] is not None else None
    own = trial["experiment_id"] if trial is not None else None
    asked = _int_id(path_params.get("exp_id", ""))
    if own is None or asked != own:
        raise ForbiddenError(f"an allocation's token reads only its own experiment ({own}), not experiment "
                             f"{path_params.get('exp_id')}: use a user's session for that")


def _targets(m: Master, named: list[tuple[str, Any]]) -> list[Target]:
    """The objects named values stand for; NotFoundError for a value that names no object; a value that is no key
    at all (`abc` for an id) is left to the route's own validation."""
    out: list[Target] = []
    for key, raw in named:
        kind = FINDERS.get(key)
        if kind is None:
            continue
        value = kind.parse(raw)
        if value is None:
            continue
        with m.db.begin() as conn:
            target = kind.find(conn, value)
        if target is None:
            raise NotFoundError(f"{kind.what} {value} not found")
        out.append(target)
    return out


def targets_of(m: Master, named: list[tuple[str, Any]]) -> list[Target]:
    """The objects `(path value name, value)` pairs name (a TensorBoard's experiments), found as a route's are."""
    return _targets(m, named)


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
