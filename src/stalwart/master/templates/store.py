"""Templates: create (in a workspace), replace, list what the caller may view, remove.

A template's name is unique on the cluster (409 naming it when taken). Its config is a YAML mapping, stored as
given: answers show its secrets hidden (`config.secrets.redact`), and a config set again with a hidden secret shown
as the placeholder keeps the stored one (`secrets.restore`, as a fork does). The route-level check
(`identity.authz.check_route`) has already checked the route's permission on the template a path names; what a body
names (the workspace a template is created in or moved to) is checked here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest, InvalidStateError, NotFoundError
from stalwart.config import secrets, templates as rules
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import templates as q, workspaces as wq
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master

DEFAULT_WORKSPACE = 1
"""Uncategorized: where a template goes when its request names no workspace."""


def view(row: Row) -> dict[str, Any]:
    """A template as the API shows it (api/models/templates.Template): its secrets hidden."""
    return {"name": row["name"], "workspace_id": row["workspace_id"], "workspace": row["workspace"],
            "config": secrets.redact(row["config"]), "owner": row["owner"], "updated_by": row["updated_by"],
            "created_at": row["created_at"], "updated_at": row["updated_at"]}


def get(conn: Conn, name: str) -> Row:
    """The template a path names; 404 naming it otherwise."""
    row = q.find(conn, name)
    if row is None:
        raise NotFoundError(f"template {name!r} not found (see `stalwart template list`)")
    return row


def _workspace(conn: Conn, workspace_id: int | None, name: str | None) -> Row:
    """The workspace a body names (id, or name; Uncategorized when neither): 404 naming an unknown one, 409 for an
    archived one."""
    if workspace_id is not None and name is not None:
        raise InvalidRequest("give workspace_id or workspace (a name), not both")
    ws = wq.workspace_by_name(conn, name) if name is not None else wq.workspace(
        conn, DEFAULT_WORKSPACE if workspace_id is None else workspace_id)
    if ws is None:
        shown = repr(name) if name is not None else str(workspace_id)
        raise NotFoundError(f"workspace {shown} not found (see `stalwart workspace list`)")
    if ws["archived"]:
        raise InvalidStateError(f"workspace {ws['name']} is archived: unarchive it first, or choose another")
    return ws


def _require_edit_in(m: Master, ident: Identity, ws: Row) -> None:
    """edit_templates in `ws` (what the caller puts there is its own: basic mode's owner rule holds)."""
    authz.require(m, ident, P.EDIT_TEMPLATES, authz.Target(f"workspace {ws['name']}", ident.username, int(ws["id"])))


def create(m: Master, ident: Identity, fields: Mapping[str, Any]) -> Row:
    """A new template owned by the caller, in the workspace the body names (edit_templates there)."""
    name = rules.check_name(fields["name"])
    config = secrets.restore(rules.read_template(fields["config"]), None, "a new template")
    with m.db.begin() as conn:
        ws = _workspace(conn, fields.get("workspace_id"), fields.get("workspace"))
    _require_edit_in(m, ident, ws)
    now = time.time()
    with m.db.begin() as conn:
        if q.find(conn, name) is not None:
            raise InvalidStateError(f"a template named {name!r} already exists (names are unique on the cluster): "
                                    f"`stalwart template set {name} FILE` replaces its config")
        q.insert(conn, name=name, workspace_id=int(ws["id"]), config=config, owner=ident.username,
                 updated_by=ident.username, created_at=now, updated_at=now)
        return get(conn, name)


def replace(m: Master, ident: Identity, name: str, fields: Mapping[str, Any]) -> Row:
    """A template's new config (a hidden secret shown as the placeholder keeps the stored one) and, when the body
    names one, its new workspace (edit_templates there too)."""
    with m.db.begin() as conn:
        current = get(conn, name)
        named = fields.get("workspace_id") is not None or fields.get("workspace") is not None
        target = _workspace(conn, fields.get("workspace_id"), fields.get("workspace")) if named else None
    config = secrets.restore(rules.read_template(fields["config"]), current["config"], f"template {name}")
    values: dict[str, Any] = {"config": config, "updated_by": ident.username, "updated_at": time.time()}
    if target is not None and target["id"] != current["workspace_id"]:
        _require_edit_in(m, ident, target)
        values["workspace_id"] = int(target["id"])
    with m.db.begin() as conn:
        q.update(conn, name, **values)
        return get(conn, name)


def listing(m: Master, ident: Identity, workspace_id: int | None = None) -> list[Row]:
    """The templates the caller may view (view_templates on their workspace), by name; only `workspace_id`'s when
    given."""
    seen = authz.viewable_workspaces(m, ident, P.VIEW_TEMPLATES)
    if workspace_id is not None:
        seen = {workspace_id} if seen is None or workspace_id in seen else set()
    with m.db.begin() as conn:
        return q.listed(conn, seen)


def remove(m: Master, name: str) -> None:
    """The template goes; what was created with it keeps its merged config."""
    with m.db.begin() as conn:
        get(conn, name)
        q.delete(conn, name)
