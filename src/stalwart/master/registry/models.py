"""Models of the registry: create (in a workspace), list what the caller may see, change, move, archive, delete.

A model's name is unique on the cluster, case-insensitively (409 naming the model that has it); an archived model
cannot be changed or given new versions until it is unarchived (409). Deleting a model deletes its versions (their
checkpoints stay with their experiments). The route-level check (`identity.authz.check_route`) has already checked
the route's permission on the model a path names; what a body names (the workspace a model is created in or moved
to) is checked here.
"""

from __future__ import annotations

import time
from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest, InvalidStateError, NotFoundError
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import models_registry as q, workspaces as wq
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.registry import names
from stalwart.master.service import Master

DEFAULT_WORKSPACE = 1
"""Uncategorized: where a model goes when its request names no workspace (as in Determined)."""


def view(row: Row) -> dict[str, Any]:
    """A model as the API shows it (api/models/registry.Model)."""
    return {"id": row["id"], "name": row["name"], "description": row["description"], "labels": list(row["labels"]),
            "metadata": dict(row["metadata"]), "notes": row["notes"], "workspace_id": row["workspace_id"],
            "workspace": row["workspace"], "username": row["owner"], "creation_time": row["created_at"],
            "last_updated_time": row["updated_at"], "archived": bool(row["archived"]),
            "num_versions": int(row["num_versions"] or 0)}


def get(conn: Conn, identifier: str | int) -> Row:
    """The model a path names (by name, or by id when all digits); 404 naming it otherwise."""
    row = q.model(conn, identifier)
    if row is None:
        raise NotFoundError(f"model {identifier} not found (see `stalwart model list`)")
    return row


def _workspace(conn: Conn, workspace_id: int | None, name: str | None) -> Row:
    """The workspace a body names (id, or name; Uncategorized when neither); 404 naming an unknown one, 409 for
    an archived one."""
    if workspace_id is not None and name is not None:
        raise InvalidRequest("give workspace_id or workspace (a name), not both")
    if name is not None:
        ws = wq.workspace_by_name(conn, name)
        shown = repr(name)
    else:
        ws = wq.workspace(conn, DEFAULT_WORKSPACE if workspace_id is None else workspace_id)
        shown = str(workspace_id)
    if ws is None:
        raise NotFoundError(f"workspace {shown} not found (see `stalwart workspace list`)")
    if ws["archived"]:
        raise InvalidStateError(f"workspace {ws['name']} is archived: unarchive it first, or choose another")
    return ws


def _require_create_in(m: Master, ident: Identity, ws: Row) -> None:
    authz.require(m, ident, P.CREATE_MODEL_REGISTRY, authz.Target(f"workspace {ws['name']}", ws["created_by"],
                                                                  int(ws["id"])))


def _unique(conn: Conn, name: str, model_id: int | None = None) -> None:
    same = q.model_named_like(conn, name)
    if same is not None and same["id"] != model_id:
        raise InvalidStateError(f"a model named {same['name']!r} already exists (model names are unique on the "
                                "cluster, ignoring case): choose another name")


def create(m: Master, ident: Identity, fields: dict[str, Any]) -> Row:
    """A new, unarchived model owned by the caller, in the workspace the body names."""
    name = names.check(fields["name"])
    with m.db.begin() as conn:
        ws = _workspace(conn, fields.get("workspace_id"), fields.get("workspace"))
    _require_create_in(m, ident, ws)
    now = time.time()
    with m.db.begin() as conn:
        _unique(conn, name)
        model_id = q.insert_model(conn, name=name, description=fields.get("description") or "",
                                  labels=list(fields.get("labels") or []), metadata=dict(fields.get("metadata") or {}),
                                  notes=fields.get("notes") or "", workspace_id=int(ws["id"]), owner=ident.username,
                                  archived=False, created_at=now, updated_at=now)
        return get(conn, model_id)


def listing(m: Master, ident: Identity, *, archived: bool | None, name: str | None, label: str | None,
            workspace_id: int | None) -> list[Row]:
    """The models the caller may see (view_model_registry on their workspace), by id."""
    seen = authz.viewable_workspaces(m, ident, P.VIEW_MODEL_REGISTRY)
    if workspace_id is not None:
        seen = {workspace_id} if seen is None or workspace_id in seen else set()
    with m.db.begin() as conn:
        return q.models(conn, workspace_ids=seen, archived=archived, name=name, label=label)


def change(m: Master, ident: Identity, identifier: str, fields: dict[str, Any]) -> Row:
    """Change the fields given (a new name is checked like a new model's); `workspace_id` moves the model, which
    needs create_model_registry in the new workspace. 409 for an archived model."""
    with m.db.begin() as conn:
        model = get(conn, identifier)
        target = _workspace(conn, fields["workspace_id"], None) if fields.get("workspace_id") is not None else None
    if model["archived"]:
        raise InvalidStateError(f"model {model['name']} is archived: unarchive it before changing it")
    if target is not None and target["id"] != model["workspace_id"]:
        _require_create_in(m, ident, target)
    values: dict[str, Any] = {k: fields[k] for k in ("description", "notes", "labels", "metadata")
                              if fields.get(k) is not None}
    if fields.get("name") is not None and fields["name"] != model["name"]:
        values["name"] = names.check(fields["name"])
    if target is not None:
        values["workspace_id"] = int(target["id"])
    with m.db.begin() as conn:
        if "name" in values:
            _unique(conn, values["name"], int(model["id"]))
        if values:
            q.update_model(conn, int(model["id"]), updated_at=time.time(), **values)
        return get(conn, int(model["id"]))


def set_archived(m: Master, identifier: str, archived: bool) -> Row:
    """Archive or unarchive a model (doing what is already so changes nothing)."""
    with m.db.begin() as conn:
        model = get(conn, identifier)
        if bool(model["archived"]) != archived:
            q.update_model(conn, int(model["id"]), archived=archived, updated_at=time.time())
        return get(conn, int(model["id"]))


def delete(m: Master, identifier: str) -> None:
    """The model and all its versions (their checkpoints stay with their experiments, and GC may take them)."""
    with m.db.begin() as conn:
        q.delete_model(conn, int(get(conn, identifier)["id"]))
