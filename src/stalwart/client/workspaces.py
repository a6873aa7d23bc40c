"""Workspaces, projects, moving experiments, resource pools and the workspaces they are bound to, user groups and
roles (RBAC).

The master looks workspaces and projects up by id; `workspace_by_name` and `project_by_name` find one by its name
through the list routes (a name the master does not know is a NotFoundError naming it and what exists).
"""

from __future__ import annotations

from typing import Any

from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.api.models import common, elastic, experiments, workspaces as ws
from stalwart.client.endpoints import Api, body, endpoint

WS = "/api/v1/workspaces"
PJ = "/api/v1/projects"
RP = "/api/v1/resource-pools"
POOLS_TIMEOUT_S = 45.0
"""How long `resource_pools` waits: longer than the master's Slurm tools may take (30 s) to say they failed."""

LIST_WORKSPACES = endpoint("GET", WS, ws.WorkspaceList)
CREATE_WORKSPACE = endpoint("POST", WS, ws.WorkspaceEnvelope, ws.CreateWorkspace)
GET_WORKSPACE = endpoint("GET", WS + "/{workspace_id}", ws.WorkspaceEnvelope)
PATCH_WORKSPACE = endpoint("PATCH", WS + "/{workspace_id}", ws.WorkspaceEnvelope, ws.PatchWorkspace)
ARCHIVE_WORKSPACE = endpoint("POST", WS + "/{workspace_id}/archive", ws.WorkspaceEnvelope)
UNARCHIVE_WORKSPACE = endpoint("POST", WS + "/{workspace_id}/unarchive", ws.WorkspaceEnvelope)
DELETE_WORKSPACE = endpoint("DELETE", WS + "/{workspace_id}", common.Empty)
LIST_PROJECTS = endpoint("GET", WS + "/{workspace_id}/projects", ws.ProjectList)
CREATE_PROJECT = endpoint("POST", WS + "/{workspace_id}/projects", ws.ProjectEnvelope, ws.CreateProject)
GET_PROJECT = endpoint("GET", PJ + "/{project_id}", ws.ProjectEnvelope)
PATCH_PROJECT = endpoint("PATCH", PJ + "/{project_id}", ws.ProjectEnvelope, ws.PatchProject)
ARCHIVE_PROJECT = endpoint("POST", PJ + "/{project_id}/archive", ws.ProjectEnvelope)
UNARCHIVE_PROJECT = endpoint("POST", PJ + "/{project_id}/unarchive", ws.ProjectEnvelope)
DELETE_PROJECT = endpoint("DELETE", PJ + "/{project_id}", common.Empty)
MOVE_EXPERIMENT = endpoint("POST", "/api/v1/experiments/{exp_id}/move", experiments.ExperimentEnvelope,
                           ws.MoveExperiment)
LIST_RESOURCE_POOLS = endpoint("GET", RP, ws.ResourcePoolList)
POOL_BINDINGS = endpoint("GET", RP + "/{pool}/workspace-bindings", ws.PoolBindingList)
BIND_POOL = endpoint("POST", RP + "/{pool}/workspace-bindings", ws.PoolBindingList, ws.PoolBindings)
UNBIND_POOL = endpoint("DELETE", RP + "/{pool}/workspace-bindings", ws.PoolBindingList, ws.PoolBindings)
POOL_INSTANCES = endpoint("GET", RP + "/{pool}/instances", elastic.PoolInstances)
LIST_GROUPS = endpoint("GET", "/api/v1/groups", ws.GroupList)
CREATE_GROUP = endpoint("POST", "/api/v1/groups", ws.GroupEnvelope, ws.CreateGroup)
GET_GROUP = endpoint("GET", "/api/v1/groups/{group_name}", ws.GroupEnvelope)
DELETE_GROUP = endpoint("DELETE", "/api/v1/groups/{group_name}", common.Empty)
ADD_MEMBERS = endpoint("POST", "/api/v1/groups/{group_name}/members", ws.GroupEnvelope, ws.GroupMembers)
REMOVE_MEMBERS = endpoint("DELETE", "/api/v1/groups/{group_name}/members", ws.GroupEnvelope, ws.GroupMembers)
LIST_ROLES = endpoint("GET", "/api/v1/rbac/roles", ws.RoleList)
GET_ROLE = endpoint("GET", "/api/v1/rbac/roles/{role}", ws.RoleEnvelope)
ASSIGNMENTS = endpoint("GET", "/api/v1/rbac/assignments", ws.RoleAssignmentList)
ASSIGN = endpoint("POST", "/api/v1/rbac/assignments", ws.RoleAssignmentList, ws.AssignRole)
UNASSIGN = endpoint("POST", "/api/v1/rbac/unassignments", ws.RoleAssignmentList, ws.AssignRole)
MY_PERMISSIONS = endpoint("GET", "/api/v1/rbac/my-permissions", ws.MyPermissions)


def _given(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


class WorkspacesApi(Api):
    # -- workspaces ----------------------------------------------------------------------------------
    def list_workspaces(self) -> list[ws.Workspace]:
        return self.call(LIST_WORKSPACES).workspaces

    def create_workspace(self, name: str, *, agent_user_group: dict[str, Any] | None = None,
                         checkpoint_storage_config: dict[str, Any] | None = None,
                         default_compute_pool: str | None = None, default_aux_pool: str | None = None,
                         kubernetes_namespace: str | None = None) -> ws.Workspace:
        """`agent_user_group`: {agentUid, agentGid, agentUser, agentGroup}, the OS user its tasks run as by default;
        `kubernetes_namespace`: where its pods go under a Kubernetes resource manager (admins only)."""
        fields = _given(name=name, agentUserGroup=agent_user_group, checkpointStorageConfig=checkpoint_storage_config,
                        defaultComputePool=default_compute_pool, defaultAuxPool=default_aux_pool,
                        kubernetesNamespace=kubernetes_namespace)
        return self.call(CREATE_WORKSPACE, json_body=body(ws.CreateWorkspace, **fields)).workspace

    def get_workspace(self, workspace_id: int) -> ws.Workspace:
        return self.call(GET_WORKSPACE, path={"workspace_id": workspace_id}).workspace

    def edit_workspace(self, workspace_id: int, *, name: str | None = None,
                       agent_user_group: dict[str, Any] | None = None,
                       checkpoint_storage_config: dict[str, Any] | None = None,
                       default_compute_pool: str | None = None, default_aux_pool: str | None = None,
                       kubernetes_namespace: str | None = None) -> ws.Workspace:
        """Change only the fields given."""
        fields = _given(name=name, agentUserGroup=agent_user_group, checkpointStorageConfig=checkpoint_storage_config,
                        defaultComputePool=default_compute_pool, defaultAuxPool=default_aux_pool,
                        kubernetesNamespace=kubernetes_namespace)
        return self.call(PATCH_WORKSPACE, path={"workspace_id": workspace_id},
                         json_body=body(ws.PatchWorkspace, **fields)).workspace

    def archive_workspace(self, workspace_id: int) -> ws.Workspace:
        return self.call(ARCHIVE_WORKSPACE, path={"workspace_id": workspace_id}, json_body={}).workspace

    def unarchive_workspace(self, workspace_id: int) -> ws.Workspace:
        return self.call(UNARCHIVE_WORKSPACE, path={"workspace_id": workspace_id}, json_body={}).workspace

    def delete_workspace(self, workspace_id: int) -> None:
        """Delete an empty workspace (its projects hold no experiments or commands; else 409)."""
        self.call(DELETE_WORKSPACE, path={"workspace_id": workspace_id})

    def workspace_by_name(self, name: str) -> ws.Workspace:
        """The workspace called `name` (NotFoundError naming the ones there are, when none is)."""
        everything = self.list_workspaces()
        for w in everything:
            if w.name == name:
                return w
        known = ", ".join(sorted(w.name for w in everything)) or "none"
        raise NotFoundError(f"workspace '{name}' not found (workspaces you can see: {known}); "
                            f"create it with `stalwart workspace create {name}`")

    # -- projects ------------------------------------------------------------------------------------
    def list_projects(self, workspace_id: int) -> list[ws.Project]:
        return self.call(LIST_PROJECTS, path={"workspace_id": workspace_id}).projects

    def create_project(self, workspace_id: int, name: str, *, description: str | None = None,
                       key: str | None = None) -> ws.Project:
        fields = _given(name=name, description=description, key=key)
        return self.call(CREATE_PROJECT, path={"workspace_id": workspace_id},
                         json_body=body(ws.CreateProject, **fields)).project

    def get_project(self, project_id: int) -> ws.Project:
        return self.call(GET_PROJECT, path={"project_id": project_id}).project

    def edit_project(self, project_id: int, *, name: str | None = None, description: str | None = None,
                     key: str | None = None) -> ws.Project:
        fields = _given(name=name, description=description, key=key)
        return self.call(PATCH_PROJECT, path={"project_id": project_id},
                         json_body=body(ws.PatchProject, **fields)).project

    def archive_project(self, project_id: int) -> ws.Project:
        return self.call(ARCHIVE_PROJECT, path={"project_id": project_id}, json_body={}).project

    def unarchive_project(self, project_id: int) -> ws.Project:
        return self.call(UNARCHIVE_PROJECT, path={"project_id": project_id}, json_body={}).project

    def delete_project(self, project_id: int) -> None:
        """Delete an empty project (one holding experiments or commands: 409)."""
        self.call(DELETE_PROJECT, path={"project_id": project_id})

    def project_by_name(self, workspace: str | ws.Workspace, name: str) -> ws.Project:
        """The project `name` of `workspace` (a name or a Workspace); NotFoundError naming what exists."""
        where = self.workspace_by_name(workspace) if isinstance(workspace, str) else workspace
        projects = self.list_projects(where.id)
        for p in projects:
            if p.name == name:
                return p
        known = ", ".join(sorted(p.name for p in projects)) or "none"
        raise NotFoundError(f"project '{name}' not found in workspace '{where.name}' (its projects: {known}); "
                            f"create it with `stalwart project create {where.name} {name}`")

    def move_experiment(self, exp_id: int, project_id: int) -> experiments.Experiment:
        """Move an experiment into another project (and so, perhaps, another workspace)."""
        return self.call(MOVE_EXPERIMENT, path={"exp_id": exp_id},
                         json_body=body(ws.MoveExperiment, destinationProjectId=project_id)).experiment

    # -- resource pools, and the workspaces they are bound to ------------------------------------------
    def resource_pools(self) -> list[ws.ResourcePool]:
        """Every pool of the master config with its resource manager, nodes, slots and runs now. A pool whose
        engine could not be asked (Slurm away) has null sizes and an `error`; the wait allows for the Slurm tools'
        30 s timeout on the master's side."""
        return self.call(LIST_RESOURCE_POOLS, timeout=POOLS_TIMEOUT_S).resourcePools

    def pool_instances(self, pool: str) -> elastic.PoolInstances:
        """An elastic pool's cloud instances and the provisioner's last decisions (docs/elastic-agents.md)."""
        return self.call(POOL_INSTANCES, path={"pool": pool})

    def pool_bindings(self, pool: str) -> ws.PoolBindingList:
        """The workspaces `pool` is bound to (none: every workspace may use it)."""
        return self.call(POOL_BINDINGS, path={"pool": pool})

    def bind_pool(self, pool: str, workspace_ids: list[int]) -> ws.PoolBindingList:
        return self.call(BIND_POOL, path={"pool": pool}, json_body=body(ws.PoolBindings, workspaceIds=workspace_ids))

    def unbind_pool(self, pool: str, workspace_ids: list[int]) -> ws.PoolBindingList:
        return self.call(UNBIND_POOL, path={"pool": pool},
                         json_body=body(ws.PoolBindings, workspaceIds=workspace_ids))

    # -- user groups ---------------------------------------------------------------------------------
    def list_groups(self) -> list[ws.Group]:
        return self.call(LIST_GROUPS).groups

    def create_group(self, name: str, *, add_users: list[str] | None = None) -> ws.Group:
        fields: dict[str, Any] = {"name": name}
        if add_users:
            fields["addUsers"] = add_users
        return self.call(CREATE_GROUP, json_body=body(ws.CreateGroup, **fields)).group

    def get_group(self, name: str) -> ws.Group:
        return self.call(GET_GROUP, path={"group_name": name}).group

    def delete_group(self, name: str) -> None:
        self.call(DELETE_GROUP, path={"group_name": name})

    def add_group_members(self, name: str, usernames: list[str]) -> ws.Group:
        return self.call(ADD_MEMBERS, path={"group_name": name},
                         json_body=body(ws.GroupMembers, usernames=usernames)).group

    def remove_group_members(self, name: str, usernames: list[str]) -> ws.Group:
        return self.call(REMOVE_MEMBERS, path={"group_name": name},
                         json_body=body(ws.GroupMembers, usernames=usernames)).group

    # -- roles ---------------------------------------------------------------------------------------
    def list_roles(self) -> list[ws.Role]:
        return self.call(LIST_ROLES).roles

    def get_role(self, name: str) -> ws.Role:
        return self.call(GET_ROLE, path={"role": name}).role

    def role_assignments(self, *, username: str | None = None, group_name: str | None = None,
                         workspace_id: int | None = None) -> list[ws.RoleAssignment]:
        """Role assignments, only those of the user, group or workspace given."""
        params = _given(username=username, groupName=group_name, workspaceId=workspace_id)
        return self.call(ASSIGNMENTS, params=params or None).assignments

    def assign_role(self, role: str, *, username: str | None = None, group_name: str | None = None,
                    workspace_id: int | None = None) -> list[ws.RoleAssignment]:
        """Give `role` to a user or a group (exactly one), on one workspace or (none given) the whole cluster."""
        return self.call(ASSIGN, json_body=_assignment(role, username, group_name, workspace_id)).assignments

    def unassign_role(self, role: str, *, username: str | None = None, group_name: str | None = None,
                      workspace_id: int | None = None) -> list[ws.RoleAssignment]:
        return self.call(UNASSIGN, json_body=_assignment(role, username, group_name, workspace_id)).assignments

    def my_permissions(self) -> ws.MyPermissions:
        return self.call(MY_PERMISSIONS)


def _assignment(role: str, username: str | None, group_name: str | None, workspace_id: int | None) -> dict[str, Any]:
    if (username is None) == (group_name is None):
        raise InvalidRequest("give exactly one of a username and a group name to assign the role to")
    return body(ws.AssignRole, **_given(role=role, username=username, groupName=group_name, workspaceId=workspace_id))
