"""The one registry of permission names: what a user may be allowed to do, and who may in basic mode.

Every user route of the route table names one of these; the master checks it in one place
(`master/identity/authz.require`), and a refusal (403) names it. Basic mode (`security.authz.type: basic`,
the default) has three kinds of rule, as Determined's open edition drew its lines:

- `ANYONE`: every active user (reading what is on the cluster, submitting work of one's own);
- `OWNER`: the owner of the object, and admins (changing, killing or deleting experiments, commands, jobs,
  checkpoints; one's own account and tokens);
- `ADMIN`: admins only (users, agents, the audit log).

With `security.authz.type: rbac` a user may do what the roles assigned to them (or to a group of theirs)
grant, on the whole cluster or on one workspace (`ROLES`, Determined's role names). The account permissions
(`ACCOUNT`) stay as in basic mode for every active user; admins have every permission in both modes.
New domains add their names here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Rule(str, enum.Enum):
    ANYONE = "anyone"
    OWNER = "owner"
    ADMIN = "admin"


@dataclass(frozen=True)
class Permission:
    name: str
    description: str
    basic: Rule

    def __str__(self) -> str:
        return self.name


def _p(name: str, description: str, basic: Rule) -> Permission:
    return Permission(name, description, basic)


VIEW_EXPERIMENTS = _p("view_experiments", "read experiments, trials, metrics, logs, checkpoints and model code",
                      Rule.ANYONE)
CREATE_EXPERIMENTS = _p("create_experiments", "create, fork and continue experiments", Rule.ANYONE)
EDIT_EXPERIMENTS = _p("edit_experiments", "pause, activate, kill, archive, edit and continue an experiment, change "
                                          "its checkpoint GC policy and log retention and kill its trials",
                      Rule.OWNER)
DELETE_EXPERIMENTS = _p("delete_experiments", "delete an experiment and everything it stored", Rule.OWNER)
DELETE_CHECKPOINTS = _p("delete_checkpoints", "delete checkpoints", Rule.OWNER)
VIEW_CLUSTER = _p("view_cluster", "read agents, slots, resource pools, the job queue (others' jobs anonymously) and "
                                  "the scheduler's preview", Rule.ANYONE)
VIEW_TASKS = _p("view_tasks", "read tasks (commands, notebooks, TensorBoards, shells): their configs, states and logs",
                Rule.ANYONE)
MANAGE_AGENTS = _p("manage_agents", "enable, disable and drain agents; list and revoke their credentials",
                   Rule.ADMIN)
EDIT_JOBS = _p("edit_jobs", "change a job's priority, weight, resource pool or queue position", Rule.OWNER)
CREATE_COMMANDS = _p("create_commands", "start tasks: commands, notebooks, TensorBoards and shells", Rule.ANYONE)
EDIT_COMMANDS = _p("edit_commands", "kill a task (opening a notebook or shell is its owner's alone)", Rule.OWNER)
VIEW_USERS = _p("view_users", "list users and read their public details", Rule.ANYONE)
EDIT_OWN_ACCOUNT = _p("edit_own_account", "change one's own display name and password", Rule.OWNER)
MANAGE_USERS = _p("manage_users", "create users, make and unmake admins, activate, deactivate, set any password",
                  Rule.ADMIN)
MANAGE_OWN_TOKENS = _p("manage_own_tokens", "create, list and revoke one's own access tokens", Rule.OWNER)
MANAGE_ALL_TOKENS = _p("manage_all_tokens", "list and revoke every user's access tokens", Rule.ADMIN)
VIEW_AUDIT = _p("view_audit", "read the audit log", Rule.ADMIN)
SIGN_OUT = _p("sign_out", "end one's own session", Rule.ANYONE)
VIEW_WORKSPACES = _p("view_workspaces", "read workspaces and their projects", Rule.ANYONE)
CREATE_WORKSPACES = _p("create_workspaces", "create workspaces", Rule.ANYONE)
EDIT_WORKSPACES = _p("edit_workspaces", "rename, archive and configure a workspace", Rule.OWNER)
DELETE_WORKSPACES = _p("delete_workspaces", "delete an empty workspace", Rule.OWNER)
CREATE_PROJECTS = _p("create_projects", "create projects in a workspace", Rule.ANYONE)
EDIT_PROJECTS = _p("edit_projects", "rename, describe and archive a project", Rule.OWNER)
DELETE_PROJECTS = _p("delete_projects", "delete an empty project", Rule.OWNER)
ASSIGN_ROLES = _p("assign_roles", "assign and unassign roles", Rule.ADMIN)
VIEW_ROLES = _p("view_roles", "list roles and their permissions, and one's own", Rule.ANYONE)
MANAGE_GROUPS = _p("manage_groups", "create and delete user groups and change their members", Rule.ADMIN)
BIND_POOLS = _p("bind_pools", "bind resource pools to workspaces, and a workspace to a Kubernetes namespace",
                Rule.ADMIN)
SET_AGENT_USER = _p("set_agent_user", "link a user or a workspace to the OS user its tasks run as on agents",
                    Rule.ADMIN)
VIEW_MODEL_REGISTRY = _p("view_model_registry", "read the model registry", Rule.ANYONE)
CREATE_MODEL_REGISTRY = _p("create_model_registry", "create models in a workspace's model registry", Rule.ANYONE)
EDIT_MODEL_REGISTRY = _p("edit_model_registry", "change, archive and move a model; register and change its versions",
                         Rule.OWNER)
DELETE_MODEL_REGISTRY = _p("delete_model_registry", "delete a model or a model version", Rule.OWNER)
EDIT_WEBHOOKS = _p("edit_webhooks", "create, list, test and delete webhooks: a workspace's (on that workspace) or "
                                    "the cluster's (on the cluster)", Rule.ADMIN)
VIEW_TEMPLATES = _p("view_templates", "read configuration templates (their secrets hidden) and create experiments and "
                                      "tasks with them", Rule.ANYONE)
EDIT_TEMPLATES = _p("edit_templates", "create, change and remove configuration templates", Rule.OWNER)

REGISTRY: dict[str, Permission] = {p.name: p for p in (
    VIEW_EXPERIMENTS, CREATE_EXPERIMENTS, EDIT_EXPERIMENTS, DELETE_EXPERIMENTS, DELETE_CHECKPOINTS, VIEW_CLUSTER,
    VIEW_TASKS, MANAGE_AGENTS, EDIT_JOBS, CREATE_COMMANDS, EDIT_COMMANDS, VIEW_USERS, EDIT_OWN_ACCOUNT, MANAGE_USERS,
    MANAGE_OWN_TOKENS, MANAGE_ALL_TOKENS, VIEW_AUDIT, SIGN_OUT, VIEW_WORKSPACES, CREATE_WORKSPACES, EDIT_WORKSPACES,
    DELETE_WORKSPACES, CREATE_PROJECTS, EDIT_PROJECTS, DELETE_PROJECTS, ASSIGN_ROLES, VIEW_ROLES, MANAGE_GROUPS,
    BIND_POOLS, SET_AGENT_USER, VIEW_MODEL_REGISTRY, CREATE_MODEL_REGISTRY, EDIT_MODEL_REGISTRY,
    DELETE_MODEL_REGISTRY, EDIT_WEBHOOKS, VIEW_TEMPLATES, EDIT_TEMPLATES)}
"""Every permission by name."""

ACCOUNT = frozenset({SIGN_OUT, EDIT_OWN_ACCOUNT, MANAGE_OWN_TOKENS, VIEW_USERS, VIEW_ROLES, VIEW_CLUSTER})
"""What every active user may do in rbac mode too, whatever their roles (by the basic rules)."""

CLUSTER_ONLY = frozenset({MANAGE_AGENTS, MANAGE_USERS, MANAGE_ALL_TOKENS, VIEW_AUDIT, MANAGE_GROUPS, BIND_POOLS,
                          CREATE_WORKSPACES, SET_AGENT_USER})
"""Permissions on no workspace: only a role assigned on the whole cluster grants them."""

NOT_FOR_TASKS = frozenset({MANAGE_USERS, EDIT_OWN_ACCOUNT, MANAGE_OWN_TOKENS, MANAGE_ALL_TOKENS, MANAGE_GROUPS,
                           ASSIGN_ROLES, MANAGE_AGENTS, BIND_POOLS, SET_AGENT_USER})
"""What a task's credential (the owner session a trial, command or other task holds) never has, whoever its owner:
the permissions that change identity or the cluster (users, passwords, tokens, groups, roles, agents, pools,
agent-user links). Everything else is its owner's, for as long as its allocation lives."""


@dataclass(frozen=True)
class Role:
    name: str
    description: str
    permissions: frozenset[Permission]
    workspace_scoped: bool = True  # may be assigned on one workspace (else on the cluster only)


_VIEW = frozenset({VIEW_EXPERIMENTS, VIEW_TASKS, VIEW_WORKSPACES, VIEW_MODEL_REGISTRY, VIEW_TEMPLATES})
_EDIT = _VIEW | {CREATE_EXPERIMENTS, EDIT_EXPERIMENTS, DELETE_EXPERIMENTS, DELETE_CHECKPOINTS, EDIT_JOBS,
                 CREATE_PROJECTS, EDIT_PROJECTS, DELETE_PROJECTS, CREATE_COMMANDS, EDIT_COMMANDS,
                 CREATE_MODEL_REGISTRY, EDIT_MODEL_REGISTRY, DELETE_MODEL_REGISTRY, EDIT_TEMPLATES}
_NTSC = frozenset({CREATE_COMMANDS, EDIT_COMMANDS})

ROLES: dict[str, Role] = {r.name: r for r in (
    Role("ClusterAdmin", "everything, everywhere", frozenset(REGISTRY.values()), workspace_scoped=False),
    Role("WorkspaceAdmin", "everything within the workspace: its settings, projects, experiments, tasks and "
                           "who has which role in it", _EDIT | {EDIT_WORKSPACES, DELETE_WORKSPACES, ASSIGN_ROLES,
                                                                      EDIT_WEBHOOKS}),
    Role("WorkspaceCreator", "create workspaces (in rbac mode the creator gets WorkspaceAdmin on each one it "
                             "creates, as security.authz.workspace_creator_assign_role says)",
         frozenset({CREATE_WORKSPACES}), workspace_scoped=False),
    Role("Editor", "create, change and delete projects, experiments and tasks in the workspace", _EDIT),
    Role("EditorRestricted", "an Editor who may not run commands or other interactive tasks", _EDIT - _NTSC),
    Role("Viewer", "read everything in the workspace", _VIEW),
    Role("ModelRegistryViewer", "read the workspace's model registry", frozenset({VIEW_MODEL_REGISTRY})),
)}
"""Determined's roles, each a set of registry permissions."""
