"""Workspaces and projects: create, change, archive, delete, move experiments between projects, and their views.

`Uncategorized` (workspace 1, project 1) always exists: it cannot be renamed, archived or deleted, and the workspace's
settings cannot be changed (as Determined's). A workspace or project is deleted only when it holds no experiment or
command (move or delete them first), so deleting one never deletes anyone's work.

A workspace's settings are checked as they come: its default checkpoint storage as an experiment's
`checkpoint_storage` is (`config.storage`), its OS user never root unless the master allows root tasks
(`allocations.root_guard`). In rbac mode the creator of a workspace gets the role the master config names on it
(`security.authz.workspace_creator_assign_role`: WorkspaceAdmin by default, as Determined's).
"""

from __future__ import annotations

import time
from typing import Any

from stalwart.api.errors import InvalidRequest, InvalidStateError, NotFoundError
from stalwart.config import secrets
from stalwart.config.storage import validate_checkpoint_storage
from stalwart.master.allocations import root_guard
from stalwart.master.identity import sessions
from stalwart.master.queries import (
    models_registry,
    templates as template_rows,
    users as user_rows,
    webhooks as webhook_rows,
    workspaces as wq,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master

_AGENT_FIELDS = (("agentUid", "agent_uid"), ("agentGid", "agent_gid"), ("agentUser", "agent_user"),
                 ("agentGroup", "agent_group"))


def get_workspace(conn: Conn, workspace_id: int) -> Row:
    ws = wq.workspace(conn, workspace_id)
    if ws is None:
        raise NotFoundError(f"workspace {workspace_id} not found (see `stalwart workspace list`)")
    return ws


def get_project(conn: Conn, project_id: int) -> Row:
    pj = wq.project(conn, project_id)
    if pj is None:
        raise NotFoundError(f"project {project_id} not found (see `stalwart project list WORKSPACE`)")
    return pj


def workspace_views(conn: Conn, rows: list[Row]) -> list[dict[str, Any]]:
    """The views of several workspaces, their counts and pool bindings read once for all."""
    projects, experiments = wq.counts_by_workspace(conn)
    bindings = wq.bindings(conn)
    return [_view(ws, projects, experiments, bindings) for ws in rows]


def workspace_view(conn: Conn, ws: Row) -> dict[str, Any]:
    return workspace_views(conn, [ws])[0]


def _view(ws: Row, projects: dict[int, int], experiments: dict[int, int],
          bindings: dict[str, list[int]]) -> dict[str, Any]:
    agent = {k: ws[col] for k, col in _AGENT_FIELDS}
    bound = sorted(pool for pool, ids in bindings.items() if ws["id"] in ids)
    return {"id": ws["id"], "name": ws["name"], "archived": bool(ws["archived"]), "immutable": bool(ws["immutable"]),
            "createdBy": ws["created_by"], "createdAt": ws["created_at"],
            "numProjects": projects.get(ws["id"], 0), "numExperiments": experiments.get(ws["id"], 0),
            "agentUserGroup": agent if any(v is not None for v in agent.values()) else None,
            "checkpointStorageConfig": secrets.redact_storage(ws["checkpoint_storage"]),  # its secrets hidden
            "defaultComputePool": ws["default_compute_pool"],
            "defaultAuxPool": ws["default_aux_pool"], "boundPools": bound,
            "kubernetesNamespace": ws["kubernetes_namespace"]}


def project_view(pj: Row, num_experiments: int = 0) -> dict[str, Any]:
    return {"id": pj["id"], "name": pj["name"], "workspaceId": pj["workspace_id"],
            "workspaceName": pj["workspace_name"], "description": pj["description"], "key": pj["key"],
            "archived": bool(pj["archived"]), "immutable": bool(pj["immutable"]), "createdBy": pj["created_by"],
            "createdAt": pj["created_at"], "numExperiments": num_experiments}


def _settings(m: Master, fields: dict[str, Any], stored: Row | None = None) -> dict[str, Any]:
    """Workspace columns from request fields (agentUserGroup, checkpointStorageConfig, default pools, the
    Kubernetes namespace its pods go to), each
    checked: 400 naming the field and what is wrong. A storage secret given as the placeholder keeps the one
    `stored` (the workspace being changed) holds (config/secrets.py)."""
    out: dict[str, Any] = {}
    pools = m.settings.cluster.pool_names
    agent = fields.get("agentUserGroup")
    if agent is not None:
        root_guard.check_link(m, agent["agentUid"], agent["agentGid"], "agentUserGroup")
        out.update({col: agent[k] for k, col in _AGENT_FIELDS})
    if "checkpointStorageConfig" in fields:
        storage = fields["checkpointStorageConfig"]
        if storage is not None:
            validate_checkpoint_storage(storage, "checkpointStorageConfig")
            where = f"workspace {stored['name']}" if stored is not None else "a new workspace"
            storage = secrets.restore_storage(storage, stored["checkpoint_storage"] if stored else None, where)
        out["checkpoint_storage"] = storage
    for key, col in (("defaultComputePool", "default_compute_pool"), ("defaultAuxPool", "default_aux_pool")):
        if fields.get(key) is not None:
            if fields[key] not in pools:
                raise InvalidRequest(f"{key}: {fields[key]!r} is not a resource pool of this cluster "
                                     f"({', '.join(pools)})")
            out[col] = fields[key]
    if "kubernetesNamespace" in fields:
        out["kubernetes_namespace"] = fields["kubernetesNamespace"] or None
    return out


def create_workspace(m: Master, name: str, fields: dict[str, Any], creator: str) -> int:
    """A new workspace with its Uncategorized project; in rbac mode its creator gets the configured role on it."""
    with m.db.begin() as conn:
        if wq.workspace_by_name(conn, name) is not None:
            raise InvalidStateError(f"workspace {name} already exists")
        ws_id = wq.insert_workspace(conn, name=name, created_by=creator, created_at=time.time(),
                                    **_settings(m, fields))
        wq.insert_project(conn, workspace_id=ws_id, name="Uncategorized", description=None, key=None,
                          created_by=creator, created_at=time.time())
        assigned = _assign_creator(m, conn, ws_id, creator)
    if assigned:
        sessions.forget_all(m)  # the creator's roles changed
    return ws_id


def _assign_creator(m: Master, conn: Conn, workspace_id: int, creator: str) -> bool:
    """Give the creator of a new workspace the role `security.authz.workspace_creator_assign_role` names on it
    (rbac mode only: basic mode has no roles). Whether a role was assigned."""
    security = m.settings.cluster.security
    user = user_rows.by_name(conn, creator)
    if security.authz_type != "rbac" or security.workspace_creator_role is None or user is None:
        return False
    wq.insert_assignment(conn, role=security.workspace_creator_role, user_id=user["id"], group_id=None,
                         workspace_id=workspace_id, created_at=time.time())
    return True


def edit_workspace(m: Master, workspace_id: int, fields: dict[str, Any]) -> None:
    with m.db.begin() as conn:
        ws = get_workspace(conn, workspace_id)
        if ws["immutable"] and fields:
            raise InvalidStateError(f"workspace {ws['name']} is the default workspace: its name and settings cannot "
                                    f"be changed; create a workspace of your own for other defaults "
                                    f"(`stalwart workspace create NAME ...`)")
        values = _settings(m, fields, ws)
        if fields.get("name") is not None and fields["name"] != ws["name"]:
            if wq.workspace_by_name(conn, fields["name"]) is not None:
                raise InvalidStateError(f"workspace {fields['name']} already exists")
            values["name"] = fields["name"]
        if values:
            wq.update_workspace(conn, workspace_id, **values)


def set_workspace_archived(m: Master, workspace_id: int, archived: bool) -> None:
    with m.db.begin() as conn:
        ws = get_workspace(conn, workspace_id)
        _mutable(ws, "archived" if archived else "unarchived")
        wq.update_workspace(conn, workspace_id, archived=archived)


def delete_workspace(m: Master, workspace_id: int) -> None:
    with m.db.begin() as conn:
        ws = get_workspace(conn, workspace_id)
        _mutable(ws, "deleted")
        projects = [p["id"] for p in wq.projects_of(conn, workspace_id)]
        if projects and wq.holds_work(conn, projects):
            raise InvalidStateError(f"workspace {ws['name']} still holds experiments or commands: move them "
                                    f"(`stalwart e move ID --project W/P`) or delete them first")
        held = models_registry.model_names_in(conn, workspace_id)
        if held:
            raise InvalidStateError(f"workspace {ws['name']} still holds models ({', '.join(held[:5])}"
                                    f"{' and more' if len(held) > 5 else ''}): move them to another workspace "
                                    "(PATCH /api/v1/models/NAME with workspace_id) or delete them first")
        templates = template_rows.names_in(conn, workspace_id)
        if templates:
            raise InvalidStateError(f"workspace {ws['name']} still holds templates ({', '.join(templates[:5])}"
                                    f"{' and more' if len(templates) > 5 else ''}): move them to another workspace "
                                    "(`stalwart template set NAME FILE -w OTHER`) or remove them first")
        webhook_rows.delete_of_workspace(conn, workspace_id)  # its webhooks and their deliveries go with it
        wq.delete_workspace(conn, workspace_id)
    sessions.forget_all(m)  # its role assignments went with it


def _mutable(row: Row, doing: str) -> None:
    if row["immutable"]:
        raise InvalidStateError(f"{row['name']} is the default and cannot be {doing}")


def create_project(m: Master, workspace_id: int, name: str, description: str | None, key: str | None,
                   creator: str) -> int:
    with m.db.begin() as conn:
        ws = get_workspace(conn, workspace_id)
        if ws["archived"]:
            raise InvalidStateError(f"workspace {ws['name']} is archived: unarchive it to add projects")
        if wq.project_by_name(conn, workspace_id, name) is not None:
            raise InvalidStateError(f"project {name} already exists in workspace {ws['name']}")
        return wq.insert_project(conn, workspace_id=workspace_id, name=name, description=description, key=key,
                                 created_by=creator, created_at=time.time())


def edit_project(m: Master, project_id: int, fields: dict[str, Any]) -> None:
    with m.db.begin() as conn:
        pj = get_project(conn, project_id)
        values = {k: v for k, v in fields.items() if k in ("description", "key") and v is not None}
        if fields.get("name") is not None and fields["name"] != pj["name"]:
            _mutable(pj, "renamed")
            if wq.project_by_name(conn, pj["workspace_id"], fields["name"]) is not None:
                raise InvalidStateError(f"project {fields['name']} already exists in workspace "
                                        f"{pj['workspace_name']}")
            values["name"] = fields["name"]
        if values:
            wq.update_project(conn, project_id, **values)


def set_project_archived(m: Master, project_id: int, archived: bool) -> None:
    with m.db.begin() as conn:
        pj = get_project(conn, project_id)
        _mutable(pj, "archived" if archived else "unarchived")
        wq.update_project(conn, project_id, archived=archived)


def delete_project(m: Master, project_id: int) -> None:
    with m.db.begin() as conn:
        pj = get_project(conn, project_id)
        _mutable(pj, "deleted")
        if wq.holds_work(conn, [project_id]):
            raise InvalidStateError(f"project {pj['workspace_name']}/{pj['name']} still holds experiments or "
                                    f"commands: move them (`stalwart e move ID --project W/P`) or delete them first")
        wq.delete_project(conn, project_id)


def open_project(conn: Conn, project_id: int) -> Row:
    """A project new work may go to (404 if there is none; 409 if it or its workspace is archived)."""
    pj = get_project(conn, project_id)
    if pj["archived"] or pj["workspace_archived"]:
        raise InvalidStateError(f"project {pj['workspace_name']}/{pj['name']} is archived (or its workspace is): "
                                "unarchive it to add work to it")
    return pj
