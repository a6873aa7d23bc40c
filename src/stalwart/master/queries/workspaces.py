"""Reads and writes of workspaces, projects, user groups, role assignments and pool bindings, and where an
object lives (its owner and workspace, for the permission check)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_W = t.workspaces.c
_P = t.projects.c
_E = t.experiments.c
_C = t.commands.c
_G = t.user_groups.c
_M = t.group_members.c
_R = t.role_assignments.c
_B = t.pool_bindings.c
UNCATEGORIZED_PROJECT = 1


# -- workspaces -----------------------------------------------------------------------------------
def workspace(conn: Conn, workspace_id: int) -> Row | None:
    return conn.execute(sa.select(t.workspaces).where(_W.id == workspace_id)).mappings().first()


def workspace_by_name(conn: Conn, name: str) -> Row | None:
    return conn.execute(sa.select(t.workspaces).where(_W.name == name)).mappings().first()


def all_workspaces(conn: Conn) -> list[Row]:
    return list(conn.execute(sa.select(t.workspaces).order_by(_W.id)).mappings().all())


def workspaces_by_name(conn: Conn, *, archived: bool) -> list[Row]:
    """Every workspace (only those not archived unless `archived`), by name in any case, then id."""
    q = sa.select(t.workspaces).order_by(sa.func.lower(_W.name), _W.id)
    if not archived:
        q = q.where(_W.archived == sa.false())
    return list(conn.execute(q).mappings().all())


def insert_workspace(conn: Conn, **values: Any) -> int:
    key = conn.execute(t.workspaces.insert().values(archived=False, immutable=False, **values)).inserted_primary_key
    assert key is not None
    return int(key[0])


def update_workspace(conn: Conn, workspace_id: int, **values: Any) -> None:
    conn.execute(t.workspaces.update().where(_W.id == workspace_id).values(**values))


def delete_workspace(conn: Conn, workspace_id: int) -> None:
    conn.execute(t.role_assignments.delete().where(_R.workspace_id == workspace_id))
    conn.execute(t.pool_bindings.delete().where(_B.workspace_id == workspace_id))
    conn.execute(t.projects.delete().where(_P.workspace_id == workspace_id))
    conn.execute(t.workspaces.delete().where(_W.id == workspace_id))


def counts_by_workspace(conn: Conn) -> tuple[dict[int, int], dict[int, int]]:
    """Projects per workspace, and experiments per workspace."""
    per_ws = sa.select(_P.workspace_id, sa.func.count()).group_by(_P.workspace_id)
    projects = {int(k): int(v) for k, v in conn.execute(per_ws).all()}
    exps = per_ws.select_from(t.experiments).join(t.projects, _P.id == _E.project_id)
    experiments = {int(k): int(v) for k, v in conn.execute(exps).all()}
    return projects, experiments


# -- projects ---------------------------------------------------------------------------------------
def project(conn: Conn, project_id: int) -> Row | None:
    q = (sa.select(t.projects, _W.name.label("workspace_name"), _W.archived.label("workspace_archived"))
         .join(t.workspaces, _W.id == _P.workspace_id).where(_P.id == project_id))
    return conn.execute(q).mappings().first()


def project_by_name(conn: Conn, workspace_id: int, name: str) -> Row | None:
    row = conn.execute(sa.select(_P.id).where(_P.workspace_id == workspace_id, _P.name == name)).first()
    return project(conn, row.id) if row is not None else None


def projects_of(conn: Conn, workspace_id: int) -> list[Row]:
    q = (sa.select(t.projects, _W.name.label("workspace_name"), _W.archived.label("workspace_archived"))
         .join(t.workspaces, _W.id == _P.workspace_id).where(_P.workspace_id == workspace_id).order_by(_P.id))
    return list(conn.execute(q).mappings().all())


def projects_by_name(conn: Conn, workspace_id: int) -> list[Row]:
    """A workspace's projects (archived ones too), by name in any case, then id; with their workspace's name."""
    q = (sa.select(t.projects, _W.name.label("workspace_name"), _W.archived.label("workspace_archived"))
         .join(t.workspaces, _W.id == _P.workspace_id).where(_P.workspace_id == workspace_id)
         .order_by(sa.func.lower(_P.name), _P.id))
    return list(conn.execute(q).mappings().all())


def insert_project(conn: Conn, **values: Any) -> int:
    key = conn.execute(t.projects.insert().values(archived=False, immutable=False, **values)).inserted_primary_key
    assert key is not None
    return int(key[0])


def update_project(conn: Conn, project_id: int, **values: Any) -> None:
    conn.execute(t.projects.update().where(_P.id == project_id).values(**values))


def delete_project(conn: Conn, project_id: int) -> None:
    conn.execute(t.projects.delete().where(_P.id == project_id))


def experiments_per_project(conn: Conn, project_ids: list[int]) -> dict[int, int]:
    q = sa.select(_E.project_id, sa.func.count()).where(_E.project_id.in_(project_ids)).group_by(_E.project_id)
    return {int(k): int(v) for k, v in conn.execute(q).all()}


def holds_work(conn: Conn, project_ids: list[int]) -> bool:
    """Do these projects hold any experiment or command?"""
    for table, col in ((t.experiments, _E.project_id), (t.commands, _C.project_id)):
        if conn.execute(sa.select(sa.func.count()).select_from(table).where(col.in_(project_ids))).scalar_one():
            return True
    return False


def move_experiment(conn: Conn, exp_id: int, project_id: int) -> None:
    conn.execute(t.experiments.update().where(_E.id == exp_id).values(project_id=project_id))


def project_ids_in(conn: Conn, workspace_ids: set[int]) -> list[int]:
    return list(conn.execute(sa.select(_P.id).where(_P.workspace_id.in_(workspace_ids))).scalars())


# -- where an object lives: (owner, workspace id) --------------------------------------------------
def _place(conn: Conn, q: sa.Select[Any]) -> tuple[str, int] | None:
    row = conn.execute(q).first()
    return (row[0], int(row[1])) if row is not None else None


def experiment_place(conn: Conn, exp_id: int) -> tuple[str, int] | None:
    return _place(conn, sa.select(_E.owner, _P.workspace_id).join(t.projects, _P.id == _E.project_id)
                  .where(_E.id == exp_id))


def trial_place(conn: Conn, trial_id: int) -> tuple[str, int] | None:
    return _place(conn, sa.select(_E.owner, _P.workspace_id).join(t.projects, _P.id == _E.project_id)
                  .join(t.trials, t.trials.c.experiment_id == _E.id).where(t.trials.c.id == trial_id))


def command_place(conn: Conn, cmd_id: int) -> tuple[str, int] | None:
    return _place(conn, sa.select(_C.owner, _P.workspace_id).join(t.projects, _P.id == _C.project_id)
                  .where(_C.id == cmd_id))


def job_place(conn: Conn, job_id: str) -> tuple[str, int] | None:
    job = conn.execute(sa.select(t.jobs.c.type, t.jobs.c.entity_id).where(t.jobs.c.id == job_id)).first()
    if job is None:
        return None
    return experiment_place(conn, job.entity_id) if job.type == "EXPERIMENT" else command_place(conn, job.entity_id)


def project_place(conn: Conn, project_id: int) -> tuple[str, int] | None:
    row = conn.execute(sa.select(_P.created_by, _P.workspace_id).where(_P.id == project_id)).first()
    return (row.created_by or "", int(row.workspace_id)) if row is not None else None


def workspace_place(conn: Conn, workspace_id: int) -> tuple[str, int] | None:
    row = conn.execute(sa.select(_W.created_by, _W.id).where(_W.id == workspace_id)).first()
    return (row.created_by or "", int(row.id)) if row is not None else None


def checkpoint_places(conn: Conn, uuids: list[str]) -> dict[str, tuple[str, int]]:
    q = (sa.select(t.checkpoints.c.uuid, _E.owner, _P.workspace_id)
         .join(t.trials, t.trials.c.id == t.checkpoints.c.trial_id)
         .join(t.experiments, _E.id == t.trials.c.experiment_id).join(t.projects, _P.id == _E.project_id)
         .where(t.checkpoints.c.uuid.in_(uuids)))
    return {row.uuid: (row.owner, int(row.workspace_id)) for row in conn.execute(q)}


def workspaces_of_experiments(conn: Conn, exp_ids: list[int]) -> dict[int, int]:
    if not exp_ids:
        return {}
    q = sa.select(_E.id, _P.workspace_id).join(t.projects, _P.id == _E.project_id).where(_E.id.in_(exp_ids))
    return {int(i): int(w) for i, w in conn.execute(q).all()}


def places_of_experiments(conn: Conn, exp_ids: list[int]) -> dict[int, Row]:
    """Each experiment's project and workspace (ids and names)."""
    if not exp_ids:
        return {}
    q = (sa.select(_E.id, _P.id.label("project_id"), _P.name.label("project"), _W.id.label("workspace_id"),
                   _W.name.label("workspace"))
         .join(t.projects, _P.id == _E.project_id).join(t.workspaces, _W.id == _P.workspace_id)
         .where(_E.id.in_(exp_ids)))
    return {int(r["id"]): r for r in conn.execute(q).mappings()}


def places_of_projects(conn: Conn, project_ids: list[int]) -> list[Row]:
    """Each project's id and name, and its workspace's id and name (`workspace_name`)."""
    if not project_ids:
        return []
    q = (sa.select(_P.id, _P.name, _P.workspace_id, _W.name.label("workspace_name"))
         .select_from(t.projects.join(t.workspaces, _P.workspace_id == _W.id)).where(_P.id.in_(project_ids)))
    return list(conn.execute(q).mappings().all())


# -- user groups -------------------------------------------------------------------------------------
def group_by_name(conn: Conn, name: str) -> Row | None:
    return conn.execute(sa.select(t.user_groups).where(_G.name == name)).mappings().first()


def all_groups(conn: Conn) -> list[Row]:
    return list(conn.execute(sa.select(t.user_groups).order_by(_G.id)).mappings().all())


def insert_group(conn: Conn, name: str, created_at: float) -> int:
    key = conn.execute(t.user_groups.insert().values(name=name, created_at=created_at)).inserted_primary_key
    assert key is not None
    return int(key[0])


def delete_group(conn: Conn, group_id: int) -> None:
    conn.execute(t.role_assignments.delete().where(_R.group_id == group_id))
    conn.execute(t.group_members.delete().where(_M.group_id == group_id))
    conn.execute(t.user_groups.delete().where(_G.id == group_id))


def members(conn: Conn, group_id: int) -> list[str]:
    q = (sa.select(t.users.c.username).join(t.group_members, _M.user_id == t.users.c.id)
         .where(_M.group_id == group_id).order_by(t.users.c.username))
    return list(conn.execute(q).scalars())


def add_member(conn: Conn, group_id: int, user_id: int) -> None:
    exists = conn.execute(sa.select(_M.user_id).where(_M.group_id == group_id, _M.user_id == user_id)).first()
    if exists is None:
        conn.execute(t.group_members.insert().values(group_id=group_id, user_id=user_id))


def remove_member(conn: Conn, group_id: int, user_id: int) -> None:
    conn.execute(t.group_members.delete().where(_M.group_id == group_id, _M.user_id == user_id))


def groups_of_user(conn: Conn, user_id: int) -> list[Row]:
    q = sa.select(t.user_groups).join(t.group_members, _M.group_id == _G.id).where(_M.user_id == user_id)
    return list(conn.execute(q).mappings().all())


# -- role assignments ----------------------------------------------------------------------------------
def roles_of_user(conn: Conn, user_id: int) -> list[tuple[str, int | None]]:
    """(role, workspace id or None) of a user's own assignments and its groups'."""
    groups = sa.select(_M.group_id).where(_M.user_id == user_id)
    q = sa.select(_R.role, _R.workspace_id).where(sa.or_(_R.user_id == user_id, _R.group_id.in_(groups)))
    return [(r.role, r.workspace_id) for r in conn.execute(q)]


def assignments(conn: Conn, *, user_id: int | None = None, group_id: int | None = None,
                workspace_id: int | None = None, role: str | None = None, scoped: bool = False) -> list[Row]:
    """Assignments with their user, group and workspace names; filters combine (scoped: workspace_id may be None
    and then means the cluster-wide ones)."""
    q = (sa.select(t.role_assignments, t.users.c.username, _G.name.label("group_name"),
                   _W.name.label("workspace_name"))
         .outerjoin(t.users, t.users.c.id == _R.user_id).outerjoin(t.user_groups, _G.id == _R.group_id)
         .outerjoin(t.workspaces, _W.id == _R.workspace_id).order_by(_R.id))
    if user_id is not None:
        q = q.where(_R.user_id == user_id)
    if group_id is not None:
        q = q.where(_R.group_id == group_id)
    if role is not None:
        q = q.where(_R.role == role)
    if scoped:
        q = q.where(_R.workspace_id.is_(None) if workspace_id is None else _R.workspace_id == workspace_id)
    elif workspace_id is not None:
        q = q.where(_R.workspace_id == workspace_id)
    return list(conn.execute(q).mappings().all())


def insert_assignment(conn: Conn, *, role: str, user_id: int | None, group_id: int | None,
                      workspace_id: int | None, created_at: float) -> None:
    conn.execute(t.role_assignments.insert().values(role=role, user_id=user_id, group_id=group_id,
                                                    workspace_id=workspace_id, created_at=created_at))


def delete_assignment(conn: Conn, assignment_id: int) -> None:
    conn.execute(t.role_assignments.delete().where(_R.id == assignment_id))


def count_assignments(conn: Conn) -> int:
    """How many role assignments there are (to users and groups, on workspaces and the cluster)."""
    return int(conn.execute(sa.select(sa.func.count()).select_from(t.role_assignments)).scalar() or 0)


# -- pool bindings -------------------------------------------------------------------------------------
def bindings(conn: Conn, pool: str | None = None) -> dict[str, list[int]]:
    """Workspace ids bound to each pool (only pools with a binding appear)."""
    q = sa.select(_B.pool, _B.workspace_id).order_by(_B.pool, _B.workspace_id)
    if pool is not None:
        q = q.where(_B.pool == pool)
    out: dict[str, list[int]] = {}
    for row in conn.execute(q):
        out.setdefault(row.pool, []).append(int(row.workspace_id))
    return out


def bind(conn: Conn, pool: str, workspace_id: int) -> None:
    if not conn.execute(sa.select(_B.pool).where(_B.pool == pool, _B.workspace_id == workspace_id)).first():
        conn.execute(t.pool_bindings.insert().values(pool=pool, workspace_id=workspace_id))


def unbind(conn: Conn, pool: str, workspace_id: int) -> None:
    conn.execute(t.pool_bindings.delete().where(_B.pool == pool, _B.workspace_id == workspace_id))


def kubernetes_namespace_of_project(conn: Conn, project_id: int | None) -> str | None:
    """The Kubernetes namespace the workspace of `project_id` is bound to (None: none)."""
    if project_id is None:
        return None
    q = (sa.select(_W.kubernetes_namespace)
         .select_from(t.projects.join(t.workspaces, t.projects.c.workspace_id == _W.id))
         .where(t.projects.c.id == project_id))
    found = conn.execute(q).scalar()
    return str(found) if found else None


def kubernetes_namespaces(conn: Conn) -> set[str]:
    """Every Kubernetes namespace a workspace is bound to."""
    return {str(n) for n in conn.execute(sa.select(_W.kubernetes_namespace).where(
        _W.kubernetes_namespace.is_not(None)).distinct()).scalars()}
