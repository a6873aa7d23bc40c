"""/api/v1/workspaces, /api/v1/projects, moving experiments, the resource pools and the pools bound to workspaces."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from stalwart.api import permissions as P
from stalwart.api.errors import NotFoundError
from stalwart.api.models.common import Empty
from stalwart.api.models.experiments import Experiment, ExperimentEnvelope
from stalwart.api.models.workspaces import (
    CreateProject,
    CreateWorkspace,
    MoveExperiment,
    PatchProject,
    PatchWorkspace,
    PoolBindingList,
    PoolBindings,
    Project,
    ProjectEnvelope,
    ProjectList,
    ResourcePool,
    ResourcePoolList,
    Workspace,
    WorkspaceEnvelope,
    WorkspaceList,
)
from stalwart.master import views
from stalwart.master.identity import authz
from stalwart.master.queries import experiments as experiment_rows, jobs as job_rows, workspaces as wq
from stalwart.master.routes.common import IdPath, caller, identity, master
from stalwart.master.routes.contract import route
from stalwart.master.scheduling import pools
from stalwart.master.service import Master
from stalwart.master.workspaces import placement, spaces

router = APIRouter(prefix="/api/v1", tags=["workspaces"])

PoolPath = Annotated[str, Path(min_length=1, max_length=128, description="a resource pool's name")]
NameQuery = Annotated[str | None, Query(max_length=128, description="only the workspace of this name")]
Archived = Annotated[bool | None, Query(description="only archived (true) or unarchived (false) ones")]



def _workspace(m: Master, workspace_id: int) -> WorkspaceEnvelope:
    with m.db.begin() as conn:
        view = spaces.workspace_view(conn, spaces.get_workspace(conn, workspace_id))
    return WorkspaceEnvelope(workspace=Workspace.model_validate(view))


def _project(m: Master, project_id: int) -> ProjectEnvelope:
    with m.db.begin() as conn:
        pj = spaces.get_project(conn, project_id)
        count = wq.experiments_per_project(conn, [project_id]).get(project_id, 0)
    return ProjectEnvelope(project=Project.model_validate(spaces.project_view(pj, count)))


# -- workspaces --------------------------------------------------------------------------------------
@route(router, "GET", "/workspaces")
async def list_workspaces(request: Request, name: NameQuery = None, archived: Archived = None) -> WorkspaceList:
    """The workspaces the caller may see (every one in basic mode; in rbac mode those it holds a role in)."""
    m = master(request)
    seen = authz.viewable_workspaces(m, identity(request), P.VIEW_WORKSPACES)
    with m.db.begin() as conn:
        rows = [ws for ws in wq.all_workspaces(conn) if (seen is None or ws["id"] in seen)
                and (name is None or ws["name"] == name) and (archived is None or bool(ws["archived"]) == archived)]
        shown = spaces.workspace_views(conn, rows)
    return WorkspaceList(workspaces=[Workspace.model_validate(v) for v in shown])


def _may_set_agent_user(request: Request, fields: dict[str, Any]) -> None:
    """Naming the OS user a workspace's tasks run as needs set_agent_user, and binding it to a Kubernetes namespace
    needs bind_pools (both on the whole cluster: admins)."""
    if fields.get("agentUserGroup") is not None:
        authz.require(master(request), identity(request), P.SET_AGENT_USER)
    if "kubernetesNamespace" in fields:
        authz.require(master(request), identity(request), P.BIND_POOLS)


@route(router, "POST", "/workspaces")
async def create_workspace(request: Request, payload: CreateWorkspace) -> WorkspaceEnvelope:
    """A new workspace; an OS user for its tasks (agentUserGroup) needs set_agent_user too."""
    m = master(request)
    fields = payload.model_dump(exclude_unset=True)
    _may_set_agent_user(request, fields)
    ws_id = spaces.create_workspace(m, payload.name, fields, caller(request))
    return _workspace(m, ws_id)


@route(router, "GET", "/workspaces/{workspace_id}")
async def get_workspace(request: Request, workspace_id: IdPath) -> WorkspaceEnvelope:
    return _workspace(master(request), workspace_id)


@route(router, "PATCH", "/workspaces/{workspace_id}")
async def edit_workspace(request: Request, workspace_id: IdPath, payload: PatchWorkspace) -> WorkspaceEnvelope:
    """Change a workspace's name or settings (not Uncategorized's); an OS user needs set_agent_user too."""
    m = master(request)
    fields = payload.model_dump(exclude_unset=True)
    _may_set_agent_user(request, fields)
    spaces.edit_workspace(m, workspace_id, fields)
    return _workspace(m, workspace_id)


@route(router, "POST", "/workspaces/{workspace_id}/archive")
async def archive_workspace(request: Request, workspace_id: IdPath) -> WorkspaceEnvelope:
    spaces.set_workspace_archived(master(request), workspace_id, True)
    return _workspace(master(request), workspace_id)


@route(router, "POST", "/workspaces/{workspace_id}/unarchive")
async def unarchive_workspace(request: Request, workspace_id: IdPath) -> WorkspaceEnvelope:
    spaces.set_workspace_archived(master(request), workspace_id, False)
    return _workspace(master(request), workspace_id)


@route(router, "DELETE", "/workspaces/{workspace_id}")
async def delete_workspace(request: Request, workspace_id: IdPath) -> Empty:
    spaces.delete_workspace(master(request), workspace_id)
    return Empty()


# -- projects ------------------------------------------------------------------------------------------
@route(router, "GET", "/workspaces/{workspace_id}/projects")
async def list_projects(request: Request, workspace_id: IdPath) -> ProjectList:
    with master(request).db.begin() as conn:
        spaces.get_workspace(conn, workspace_id)
        rows = wq.projects_of(conn, workspace_id)
        counts = wq.experiments_per_project(conn, [p["id"] for p in rows])
    return ProjectList(projects=[Project.model_validate(spaces.project_view(p, counts.get(p["id"], 0))) for p in rows])


@route(router, "POST", "/workspaces/{workspace_id}/projects")
async def create_project(request: Request, workspace_id: IdPath, payload: CreateProject) -> ProjectEnvelope:
    m = master(request)
    project_id = spaces.create_project(m, workspace_id, payload.name, payload.description, payload.key,
                                       caller(request))
    return _project(m, project_id)


@route(router, "GET", "/projects/{project_id}")
async def get_project(request: Request, project_id: IdPath) -> ProjectEnvelope:
    return _project(master(request), project_id)


@route(router, "PATCH", "/projects/{project_id}")
async def edit_project(request: Request, project_id: IdPath, payload: PatchProject) -> ProjectEnvelope:
    spaces.edit_project(master(request), project_id, payload.model_dump(exclude_unset=True))
    return _project(master(request), project_id)


@route(router, "POST", "/projects/{project_id}/archive")
async def archive_project(request: Request, project_id: IdPath) -> ProjectEnvelope:
    spaces.set_project_archived(master(request), project_id, True)
    return _project(master(request), project_id)


@route(router, "POST", "/projects/{project_id}/unarchive")
async def unarchive_project(request: Request, project_id: IdPath) -> ProjectEnvelope:
    spaces.set_project_archived(master(request), project_id, False)
    return _project(master(request), project_id)


@route(router, "DELETE", "/projects/{project_id}")
async def delete_project(request: Request, project_id: IdPath) -> Empty:
    spaces.delete_project(master(request), project_id)
    return Empty()


# -- moving an experiment --------------------------------------------------------------------------------
@route(router, "POST", "/experiments/{exp_id}/move")
async def move_experiment(request: Request, exp_id: IdPath, payload: MoveExperiment) -> ExperimentEnvelope:
    """Move an experiment to another project: the caller needs edit_experiments where it is (checked before this
    runs) and create_experiments where it goes; its permissions follow it. Its pool must be usable there."""
    m, ident = master(request), identity(request)
    with m.db.begin() as conn:
        experiment_rows.get(conn, exp_id)  # 404 before anything else
        pj = spaces.open_project(conn, payload.destinationProjectId)
        authz.require(m, ident, P.CREATE_EXPERIMENTS, authz.Target(
            f"project {pj['workspace_name']}/{pj['name']}", pj["created_by"], pj["workspace_id"]))
        pool = job_rows.pool_of(conn, job_rows.EXPERIMENT, exp_id)
        if pool is not None:
            placement.check_pool(conn, pj["workspace_id"], pj["workspace_name"], pool)
        wq.move_experiment(conn, exp_id, pj["id"])
        moved = views.experiment(experiment_rows.get(conn, exp_id))
    return ExperimentEnvelope(experiment=Experiment.model_validate(moved), warnings=[])


# -- resource pools ----------------------------------------------------------------------------------------
def _pool_states(m: Master) -> list[pools.PoolState]:
    with m.db.begin() as conn:
        return pools.pool_states(m, conn)


def _resource_pool(m: Master, state: pools.PoolState) -> ResourcePool:
    cap, name = state.capacity, state.config.name
    sizes = (None,) * 5 if cap is None else (cap.nodes, cap.accepting_nodes, cap.slots_total, cap.slots_used,
                                             cap.slots_free)
    return ResourcePool(
        name=name, description=state.config.description, type=state.type,
        defaultComputePool=name == m.settings.cluster.default_compute_pool,
        defaultAuxPool=name == m.settings.cluster.default_aux_pool, schedulerType=state.scheduler,
        numAgents=sizes[0], acceptingAgents=sizes[1], slotsAvailable=sizes[2], slotsUsed=sizes[3], slotsFree=sizes[4],
        pendingRuns=state.pending, runningRuns=state.running, error=state.error)


@route(router, "GET", "/resource-pools")
async def list_resource_pools(request: Request) -> ResourcePoolList:
    """Every pool of the master config with its manager, nodes, slots and runs now (a Slurm pool's from one
    `scontrol show node`, in a thread: it may take the tools' timeout when slurmctld is away)."""
    m = master(request)
    states = await asyncio.to_thread(_pool_states, m)
    return ResourcePoolList(resourcePools=[_resource_pool(m, s) for s in states])


# -- pools bound to workspaces ---------------------------------------------------------------------------
def _bindings(m: Master, pool: str) -> PoolBindingList:
    if pool not in m.settings.cluster.pool_names:
        raise NotFoundError(f"resource pool {pool} not found; the pools are {', '.join(m.settings.cluster.pool_names)}")
    with m.db.begin() as conn:
        ids = wq.bindings(conn, pool).get(pool, [])
        names = {ws["id"]: ws["name"] for ws in wq.all_workspaces(conn)}
    return PoolBindingList(pool=pool, workspaceIds=ids, workspaceNames=[names[i] for i in ids if i in names])


@route(router, "GET", "/resource-pools/{pool}/workspace-bindings")
async def list_bindings(request: Request, pool: PoolPath) -> PoolBindingList:
    """The workspaces a pool is bound to (none: every workspace may use it)."""
    return _bindings(master(request), pool)


async def _change_bindings(request: Request, pool: str, payload: PoolBindings, bind: bool) -> PoolBindingList:
    m = master(request)
    _bindings(m, pool)
    with m.db.begin() as conn:
        for ws_id in payload.workspaceIds:
            spaces.get_workspace(conn, ws_id)
            (wq.bind if bind else wq.unbind)(conn, pool, ws_id)
    return _bindings(m, pool)


@route(router, "POST", "/resource-pools/{pool}/workspace-bindings")
async def bind_pool(request: Request, pool: PoolPath, payload: PoolBindings) -> PoolBindingList:
    return await _change_bindings(request, pool, payload, True)


@route(router, "DELETE", "/resource-pools/{pool}/workspace-bindings")
async def unbind_pool(request: Request, pool: PoolPath, payload: PoolBindings) -> PoolBindingList:
    return await _change_bindings(request, pool, payload, False)
