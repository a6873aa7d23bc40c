"""Page models of the workspaces list, a workspace (its projects) and the place of experiments (their workspace
and project), read for the web UI.

A workspace's and a project's rows are the API's (`workspaces.spaces.workspace_views` and `project_view`: the
fields of GET /api/v1/workspaces and /api/v1/projects/{id}), so the pages show what the API answers.

Which workspaces a caller may see is the caller's business: the functions take `visible`, a predicate on a
workspace id (ui/builders.py makes it from `identity.authz`), and leave out the rest; a page of a workspace or
project the caller may not see is a 404, as for one that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from stalwart.api.errors import NotFoundError
from stalwart.api.models.common import JsonObject
from stalwart.master.queries import workspaces as wq
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master
from stalwart.master.workspaces import spaces

Visible = Callable[[int], bool]
"""May the caller see the workspace with this id?"""


def workspaces_page(m: Master, visible: Visible, *, archived: bool = False) -> JsonObject:
    """Every workspace the caller may see (archived ones only when asked), by name, with its counts."""
    with m.db.begin() as conn:
        rows = [r for r in wq.workspaces_by_name(conn, archived=archived) if visible(r["id"])]
        items = spaces.workspace_views(conn, rows)
    return {"workspaces": items, "archived": archived}


def workspace_page(m: Master, visible: Visible, workspace_id: int) -> JsonObject:
    """One workspace and all its projects (archived ones too, marked), by name."""
    with m.db.begin() as conn:
        row = wq.workspace(conn, workspace_id)
        if row is None or not visible(workspace_id):
            raise NotFoundError(f"workspace {workspace_id} not found")
        projects = wq.projects_by_name(conn, workspace_id)
        counts = wq.experiments_per_project(conn, [p["id"] for p in projects])
        head = spaces.workspace_view(conn, row)
    return {"workspace": head, "projects": [spaces.project_view(p, counts.get(p["id"], 0)) for p in projects]}


def project_head(m: Master, visible: Visible, project_id: int) -> JsonObject:
    """A project (its workspace's name among its fields) and whether its workspace is archived, as the project
    page's header shows them."""
    with m.db.begin() as conn:
        row = wq.project(conn, project_id)
        if row is None or not visible(row["workspace_id"]):
            raise NotFoundError(f"project {project_id} not found")
        n = wq.experiments_per_project(conn, [project_id]).get(project_id, 0)
    return {**spaces.project_view(row, n), "workspaceArchived": bool(row["workspace_archived"])}


def places(conn: Conn, project_ids: Iterable[int]) -> dict[int, JsonObject]:
    """{project id: {project_id, project_name, workspace_id, workspace_name}} of the projects named."""
    rows = wq.places_of_projects(conn, sorted(set(project_ids)))
    return {r["id"]: {"project_id": r["id"], "project_name": r["name"], "workspace_id": r["workspace_id"],
                      "workspace_name": r["workspace_name"]} for r in rows}
