"""Who may do what: `require(identity, permission, owner)`, the one permission check of the master.

Every user route names its permission in the route table; `routes/contract` calls `check_route` for it before
the handler runs, finding the owner of the object the path names (an experiment, trial, command, job, user or
token). A handler whose objects are in the body (deleting checkpoints) or whose call needs a second permission
(making someone an admin) calls `require` itself. Basic mode (the default `security.authz.type`): admins may
do everything; others what the permission's rule allows (api/permissions.py). A refusal is a 403 naming the
permission.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import ForbiddenError, NotFoundError
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import users as q
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master


def allowed(ident: Identity, permission: P.Permission, owner: str | None = None) -> bool:
    """Basic mode: may this identity use `permission` on an object owned by `owner`?"""
    if ident.admin or permission.basic is P.Rule.ANYONE:
        return True
    return permission.basic is P.Rule.OWNER and owner is not None and owner == ident.username


def require(ident: Identity, permission: P.Permission, owner: str | None = None, what: str | None = None) -> None:
    """Refuse (403, naming the permission) unless `ident` may use `permission` on `what`, owned by `owner`."""
    if allowed(ident, permission, owner):
        return
    if permission.basic is P.Rule.ADMIN:
        why = "only admins have it"
    elif what is not None:
        why = f"{what} belongs to {owner}; only its owner or an admin may do this"
    else:
        why = "only the owner or an admin has it"
    raise ForbiddenError(f"permission denied: {ident.username} lacks {permission.name} "
                         f"({permission.description}): {why}")


_Owner = Callable[[Conn, Any], "str | None"]
_OWNERS: tuple[tuple[str, str, _Owner], ...] = (
    ("exp_id", "experiment", q.experiment_owner),
    ("trial_id", "trial", q.trial_owner),
    ("cmd_id", "command", q.command_owner),
    ("job_id", "job", q.job_owner),
    ("username", "user", lambda conn, name: name if q.by_name(conn, name) is not None else None),
    ("token_id", "token", lambda conn, tid: (row["username"] if (row := q.token(conn, tid)) else None)),
)
"""Path values that name an owned object: the value's name, what it names, how to find its owner."""


CHECKED_BY_HANDLER = frozenset({("GET", "/api/v1/tokens"), ("POST", "/api/v1/tokens"),
                                ("DELETE", "/api/v1/checkpoints")})
"""Routes with an owner-ruled permission and no owned object in their path: they act on the caller's own, and
their handlers check what the body or query names of others'. `routes/contract` refuses to register any other
such route, so one cannot slip through unchecked."""


def owner_key_in(path: str) -> bool:
    """Does a route path name an object whose owner `check_route` can find?"""
    return any("{" + key + "}" in path for key, _, _ in _OWNERS)


def target_of(path_params: Mapping[str, Any]) -> str | None:
    """What a call acts on, in words (for refusals and the audit log): 'experiment 5'."""
    for key, what, _ in _OWNERS:
        if key in path_params:
            return f"{what} {path_params[key]}"
    if path_params:
        return ", ".join(f"{k}={v}" for k, v in path_params.items())
    return None


def check_route(m: Master, ident: Identity, permission: P.Permission, path_params: Mapping[str, Any]) -> None:
    """The route-level check: `permission` on the object the path names (404 when there is none)."""
    if allowed(ident, permission):
        return
    if permission.basic is P.Rule.OWNER:
        for key, what, owner_of in _OWNERS:
            if key not in path_params:
                continue
            value = path_params[key]
            try:
                value = int(value) if key in ("exp_id", "trial_id", "cmd_id", "token_id") else value
            except ValueError:
                return  # not an id: the route's own validation answers 400
            with m.db.begin() as conn:
                owner = owner_of(conn, value)
            if owner is None:
                raise NotFoundError(f"{what} {value} not found")
            require(ident, permission, owner, f"{what} {value}")
            return
        # no owned object in the path: the call acts on the caller's own (tokens), and its handler checks what
        # the body or query names of others' (deleting checkpoints, another user's tokens)
        return
    require(ident, permission)


def require_checkpoints(m: Master, ident: Identity, permission: P.Permission, uuids: list[str]) -> None:
    """`permission` on every checkpoint named (those that do not exist are left to the caller's 404)."""
    if allowed(ident, permission):
        return
    with m.db.begin() as conn:
        owners = q.checkpoint_owners(conn, uuids)
    for uuid, owner in owners.items():
        require(ident, permission, owner, f"checkpoint {uuid}")
