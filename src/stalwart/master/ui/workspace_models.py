"""Page models of the workspaces list, a workspace (its projects) and the place of experiments (their workspace
and project), read for the web UI.

Which workspaces a caller may see is the caller's business: the functions take `visible`, a predicate on a
workspace id (routes/ui.py builds it from `identity.authz`), and leave out the rest; a page of a workspace or
project the caller may not see is a 404, as for one that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import sqlalchemy as sa

from stalwart.api.errors import NotFoundError
from stalwart.api.models.common import JsonObject
from stalwart.db import tables as t
from stalwart.master.queries import workspaces as wq
from stalwart.master.service import Master

W, P, E = t.workspaces.c, t.projects.c, t.experiments.c
Visible = Callable[[int], bool]
"""May the caller see the workspace with this id?"""


def _workspace(row: sa.RowMapping, projects: int, experiments: int) -> JsonObject:
    return {"id": row["id"], "name": row["name"], "archived": row["archived"], "immutable": row["immutable"],
            "created_by": row["created_by"], "created_at": row["created_at"], "num_projects": projects,
            "num_experiments": experiments}


def _project(row: sa.RowMapping, experiments: int) -> JsonObject:
    return {"id": row["id"], "name": row["name"], "workspace_id": row["workspace_id"],
            "description": row["description"], "archived": row["archived"], "immutable": row["immutable"],
            "created_by": row["created_by"], "created_at": row["created_at"], "num_experiments": experiments}


def workspaces_page(m: Master, visible: Visible, *, archived: bool = False) -> JsonObject:
    """Every workspace the caller may see (archived ones only when asked), by name, with its counts."""
    with m.db.begin() as conn:
        query = sa.select(t.workspaces).order_by(sa.func.lower(W.name), W.id)
        if not archived:
            query = query.where(W.archived == sa.false())
        rows = conn.execute(query).mappings().all()
        projects, experiments = wq.counts_by_workspace(conn)
    items = [_workspace(r, projects.get(r["id"], 0), experiments.get(r["id"], 0)) for r in rows if visible(r["id"])]
    return {"workspaces": items, "archived": archived}


def _workspace_row(conn: sa.Connection, workspace_id: int, visible: Visible) -> sa.RowMapping:
    row = conn.execute(sa.select(t.workspaces).where(W.id == workspace_id)).mappings().first()
    if row is None or not visible(workspace_id):
        raise NotFoundError(f"workspace {workspace_id} not found")
    return row


def workspace_page(m: Master, visible: Visible, workspace_id: int) -> JsonObject:
    """One workspace and all its projects (archived ones too, marked), by name."""
    with m.db.begin() as conn:
        row = _workspace_row(conn, workspace_id, visible)
        projects = conn.execute(sa.select(t.projects).where(P.workspace_id == workspace_id)
                                .order_by(sa.func.lower(P.name), P.id)).mappings().all()
        counts = wq.experiments_per_project(conn, [p["id"] for p in projects])
    items = [_project(p, counts.get(p["id"], 0)) for p in projects]
    return {"workspace": _workspace(row, len(items), sum(counts.values())), "projects": items}


def project_head(m: Master, visible: Visible, project_id: int) -> JsonObject:
    """A project and its workspace, as the project page's header shows them."""
    with m.db.begin() as conn:
        row = conn.execute(sa.select(t.projects).where(P.id == project_id)).mappings().first()
        if row is None or not visible(row["workspace_id"]):
            raise NotFoundError(f"project {project_id} not found")
        ws = _workspace_row(conn, row["workspace_id"], visible)
        n = conn.execute(sa.select(sa.func.count()).select_from(t.experiments).where(E.project_id == project_id)
                         ).scalar_one()
    return {**_project(row, n), "workspace_name": ws["name"], "workspace_archived": ws["archived"]}


def places(conn: sa.Connection, project_ids: Iterable[int]) -> dict[int, JsonObject]:
    """{project id: {project_id, project_name, workspace_id, workspace_name}} of the projects named."""
    ids = sorted(set(project_ids))
    if not ids:
        return {}
    rows = conn.execute(sa.select(P.id, P.name, P.workspace_id, W.name.label("workspace_name"))
                        .select_from(t.projects.join(t.workspaces, P.workspace_id == W.id))
                        .where(P.id.in_(ids))).all()
    return {pid: {"project_id": pid, "project_name": name, "workspace_id": ws_id, "workspace_name": ws_name}
            for pid, name, ws_id, ws_name in rows}
