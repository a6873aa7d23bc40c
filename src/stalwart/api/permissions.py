"""The one registry of permission names: what a user may be allowed to do, and who may in basic mode.

Every user route of the route table names one of these; the master checks it in one place
(`master/identity/authz.require`), and a refusal (403) names it. Basic mode (`security.authz.type: basic`,
the default) has three kinds of rule, as Determined's open edition drew its lines:

- `ANYONE`: every active user (reading what is on the cluster, submitting work of one's own);
- `OWNER`: the owner of the object, and admins (changing, killing or deleting experiments, commands, jobs,
  checkpoints; one's own account and tokens);
- `ADMIN`: admins only (users, agents, the audit log).

Roles (a later issue) are sets of these names; new domains add their names here.
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
EDIT_EXPERIMENTS = _p("edit_experiments", "pause, activate, kill, archive, edit and continue an experiment and "
                                          "kill its trials", Rule.OWNER)
DELETE_EXPERIMENTS = _p("delete_experiments", "delete an experiment and everything it stored", Rule.OWNER)
DELETE_CHECKPOINTS = _p("delete_checkpoints", "delete checkpoints", Rule.OWNER)
VIEW_CLUSTER = _p("view_cluster", "read agents, slots, jobs, tasks and the scheduler's preview", Rule.ANYONE)
MANAGE_AGENTS = _p("manage_agents", "enable, disable and drain agents", Rule.ADMIN)
EDIT_JOBS = _p("edit_jobs", "change a job's priority, weight, resource pool or queue position", Rule.OWNER)
CREATE_COMMANDS = _p("create_commands", "run commands on the cluster", Rule.ANYONE)
EDIT_COMMANDS = _p("edit_commands", "kill a command", Rule.OWNER)
VIEW_USERS = _p("view_users", "list users and read their public details", Rule.ANYONE)
EDIT_OWN_ACCOUNT = _p("edit_own_account", "change one's own display name and password", Rule.OWNER)
MANAGE_USERS = _p("manage_users", "create users, make and unmake admins, activate, deactivate, set any password",
                  Rule.ADMIN)
MANAGE_OWN_TOKENS = _p("manage_own_tokens", "create, list and revoke one's own access tokens", Rule.OWNER)
MANAGE_ALL_TOKENS = _p("manage_all_tokens", "list and revoke every user's access tokens", Rule.ADMIN)
VIEW_AUDIT = _p("view_audit", "read the audit log", Rule.ADMIN)
SIGN_OUT = _p("sign_out", "end one's own session", Rule.ANYONE)

REGISTRY: dict[str, Permission] = {p.name: p for p in (
    VIEW_EXPERIMENTS, CREATE_EXPERIMENTS, EDIT_EXPERIMENTS, DELETE_EXPERIMENTS, DELETE_CHECKPOINTS, VIEW_CLUSTER,
    MANAGE_AGENTS, EDIT_JOBS, CREATE_COMMANDS, EDIT_COMMANDS, VIEW_USERS, EDIT_OWN_ACCOUNT, MANAGE_USERS,
    MANAGE_OWN_TOKENS, MANAGE_ALL_TOKENS, VIEW_AUDIT, SIGN_OUT)}
"""Every permission by name."""
