"""Workspaces, projects, user groups, roles, resource pools and their bindings (Determined's nouns and field
names)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from stalwart.api.models.common import Id, Request, Response, Timestamp
from stalwart.api.models.users import Username

Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^/\x00-\x1f]+$",
                            description="a name (no '/', no control characters)")]
PoolName = Annotated[str, Field(min_length=1, max_length=128)]
Uid = Annotated[int, Field(ge=0, le=2**31 - 1)]
OsName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*\$?$")]


class AgentUserGroup(Response):
    agentUid: int | None = None
    agentGid: int | None = None
    agentUser: str | None = None
    agentGroup: str | None = None


class Workspace(Response):
    id: int
    name: str
    archived: bool
    immutable: bool
    createdBy: str | None = None
    createdAt: Timestamp
    numProjects: int = 0
    numExperiments: int = 0
    agentUserGroup: AgentUserGroup | None = None
    checkpointStorageConfig: dict[str, Any] | None = None
    defaultComputePool: str | None = None
    defaultAuxPool: str | None = None
    boundPools: list[str] = Field(default_factory=list)
    kubernetesNamespace: str | None = None


class WorkspaceEnvelope(Response):
    workspace: Workspace


class WorkspaceList(Response):
    workspaces: list[Workspace]


K8sNamespace = Annotated[str, Field(max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")]
"""A Kubernetes namespace name (a DNS-1123 label: lowercase letters, digits and '-', at most 63)."""


class AgentUserGroupRequest(Request):
    agentUid: Uid
    agentGid: Uid
    agentUser: OsName
    agentGroup: OsName


class CreateWorkspace(Request):
    name: Name
    agentUserGroup: AgentUserGroupRequest | None = None
    checkpointStorageConfig: dict[str, Any] | None = None
    defaultComputePool: PoolName | None = None
    defaultAuxPool: PoolName | None = None
    kubernetesNamespace: K8sNamespace | None = None


class PatchWorkspace(Request):
    """Only the fields given change."""

    name: Name | None = None
    agentUserGroup: AgentUserGroupRequest | None = None
    checkpointStorageConfig: dict[str, Any] | None = None
    defaultComputePool: PoolName | None = None
    defaultAuxPool: PoolName | None = None
    kubernetesNamespace: K8sNamespace | None = None


class Project(Response):
    id: int
    name: str
    workspaceId: int
    workspaceName: str
    description: str | None = None
    key: str | None = None
    archived: bool
    immutable: bool
    createdBy: str | None = None
    createdAt: Timestamp
    numExperiments: int = 0


class ProjectEnvelope(Response):
    project: Project


class ProjectList(Response):
    projects: list[Project]


class CreateProject(Request):
    name: Name
    description: Annotated[str, Field(max_length=4096)] | None = None
    key: Annotated[str, Field(min_length=1, max_length=16, pattern=r"^[A-Za-z0-9]+$")] | None = None


class PatchProject(Request):
    name: Name | None = None
    description: Annotated[str, Field(max_length=4096)] | None = None
    key: Annotated[str, Field(min_length=1, max_length=16, pattern=r"^[A-Za-z0-9]+$")] | None = None


class MoveExperiment(Request):
    destinationProjectId: Id


class Group(Response):
    id: int
    name: str
    members: list[str] = Field(default_factory=list)
    createdAt: Timestamp


class GroupEnvelope(Response):
    group: Group


class GroupList(Response):
    groups: list[Group]


class CreateGroup(Request):
    name: Name
    addUsers: list[Username] = Field(default_factory=list, max_length=10_000)


class GroupMembers(Request):
    usernames: list[Username] = Field(min_length=1, max_length=10_000)


class Role(Response):
    name: str
    description: str
    permissions: list[str]
    scopes: list[str] = Field(description="where it may be assigned: 'cluster' and/or 'workspace'")


class RoleEnvelope(Response):
    role: Role


class RoleList(Response):
    roles: list[Role]


class RoleAssignment(Response):
    id: int
    role: str
    username: str | None = None
    groupName: str | None = None
    workspaceId: int | None = None
    workspaceName: str | None = None
    createdAt: Timestamp


class RoleAssignmentList(Response):
    assignments: list[RoleAssignment]


class AssignRole(Request):
    """A role for a user or a group (exactly one), on one workspace or (workspaceId absent) the whole cluster."""

    role: Annotated[str, Field(min_length=1, max_length=64)]
    username: Username | None = None
    groupName: Name | None = None
    workspaceId: Id | None = None


class MyPermissions(Response):
    """What the caller may do: the mode, its roles, and its permissions on the cluster and per workspace."""

    mode: str
    admin: bool
    assignments: list[RoleAssignment]
    cluster: list[str]
    workspaces: dict[str, list[str]]


class PoolBindings(Request):
    workspaceIds: list[Id] = Field(min_length=1, max_length=10_000)


class PoolBindingList(Response):
    pool: str
    workspaceIds: list[int]
    workspaceNames: list[str]


Count = Annotated[int | None, Field(ge=0, description="null when the pool's engine could not be asked (see error)")]


class ResourcePool(Response):
    """A resource pool of the master config and its size now, in Determined's field names where they mean the same:
    `numAgents` counts its nodes (agents; in a Slurm pool its Slurm nodes that are not down) and `slotsAvailable`
    its slots in all, as Determined's do; `slotsFree`, `acceptingAgents`, `pendingRuns`, `runningRuns` and
    `error` are Stalwart's. `type` is the resource manager that runs its work (agent or slurm, not Determined's
    static/aws/gcp/k8s); `schedulerType` what orders its queue (priority, fair_share, or slurm)."""

    name: str
    description: str = ""
    type: str = Field(description="the resource manager that runs the pool's work: agent or slurm")
    defaultComputePool: bool = Field(description="work with slots that names no pool (nor its workspace) runs here")
    defaultAuxPool: bool = Field(description="0-slot tasks that name no pool (nor their workspace) run here")
    schedulerType: str = Field(description="what orders its queue: priority or fair_share (the master's scheduler, "
                                           "the pool's scheduler.type), or slurm (Slurm's own)")
    numAgents: Count = Field(description="its nodes: agents, or Slurm nodes not down")
    acceptingAgents: Count = Field(description="its nodes that take new work: agents not disabled, draining or "
                                               "lost; Slurm nodes not draining, drained or failing")
    slotsAvailable: Count = Field(description="its slots in all (Determined's name), used or not")
    slotsUsed: Count = Field(description="its slots that runs hold now")
    slotsFree: Count = Field(description="slotsAvailable - slotsUsed")
    pendingRuns: int = Field(description="its live runs waiting for slots (PENDING)")
    runningRuns: int = Field(description="its live runs holding slots (ASSIGNED or RUNNING)")
    error: str | None = Field(default=None, description="why the capacity fields are null: its resource manager's "
                                                        "engine could not be asked")


class ResourcePoolList(Response):
    resourcePools: list[ResourcePool]
