"""Where new work goes: the project an experiment's or command's config names (`workspace:` and `project:`,
else Uncategorized/Uncategorized), and whether its workspace may use the pool it asks for.

A pool bound to workspaces (`resource-pool bind`) may only be used by their work; a pool bound to none by
every workspace.
"""

from __future__ import annotations

from typing import Any

from stalwart.api.errors import InvalidRequest
from stalwart.master.identity.authz import Target
from stalwart.master.queries import workspaces as wq
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.workspaces import spaces


def project_for(conn: Conn, config: dict[str, Any]) -> Row:
    """The open project a config names (Uncategorized when it names none); 400 naming an unknown one."""
    ws_name, pj_name = config.get("workspace") or "", config.get("project") or ""
    if not ws_name and not pj_name:
        return spaces.open_project(conn, wq.UNCATEGORIZED_PROJECT)
    if not ws_name or not pj_name:
        raise InvalidRequest(f"{'workspace' if not ws_name else 'project'}: required when "
                             f"{'project' if not ws_name else 'workspace'} is set (give both, or neither)")
    ws = wq.workspace_by_name(conn, ws_name)
    if ws is None:
        raise InvalidRequest(f"workspace: no workspace named {ws_name!r} (see `stalwart workspace list`)")
    pj = wq.project_by_name(conn, ws["id"], pj_name)
    if pj is None:
        raise InvalidRequest(f"project: workspace {ws_name} has no project named {pj_name!r} "
                             f"(see `stalwart project list {ws_name}`)")
    return spaces.open_project(conn, pj["id"])


def check_pool(conn: Conn, workspace_id: int, workspace_name: str, pool: str) -> None:
    """400 with the reason when `pool` is bound to workspaces other than this one."""
    bound = wq.bindings(conn, pool).get(pool)
    if bound and workspace_id not in bound:
        names = sorted(ws["name"] for ws in wq.all_workspaces(conn) if ws["id"] in bound)
        raise InvalidRequest(f"resources.resource_pool: pool {pool} is bound to workspace(s) {', '.join(names)}; "
                             f"workspace {workspace_name} may not use it (an admin can bind it: `stalwart "
                             f"resource-pool bind {pool} {workspace_name}`)")


def pool_for(conn: Conn, project: Row, requested: str | None, resolved: str, slots: int) -> str:
    """The pool new work of `project` runs in: the one its config asked for, else its workspace's default
    compute (aux, for 0 slots) pool, else the cluster's (`resolved`); 400 if its workspace may not use it."""
    pool = resolved
    if not requested:
        ws = wq.workspace(conn, project["workspace_id"])
        own = (ws["default_aux_pool"] if slots == 0 else ws["default_compute_pool"]) if ws is not None else None
        pool = own or resolved
    check_pool(conn, project["workspace_id"], project["workspace_name"], pool)
    return pool


def checkpoint_storage_of(conn: Conn, project: Row) -> dict[str, Any] | None:
    """The default checkpoint storage of the project's workspace (None: the master's)."""
    ws = wq.workspace(conn, project["workspace_id"])
    storage = ws["checkpoint_storage"] if ws is not None else None
    return dict(storage) if storage else None


def target(project: Row) -> Target:
    """The permission target of creating work in `project`."""
    return Target(f"project {project['workspace_name']}/{project['name']}", project["created_by"],
                  project["workspace_id"])
