"""No task runs as root unless the master's config allows it: uid 0 or gid 0 as a task's OS user.

A user's or a workspace's link to an OS user (its tasks run as that user on agents that run as root) may not
name uid 0 or gid 0 unless `security.allow_root_tasks: true` in the master config, or a resource pool's
`allow_root_tasks: true` (a pool's setting, when given, overrides the cluster's for the tasks that run there).
The check is made twice: when a link is made (`check_link`, a 400) and when a run starts (`start_refusal`, which
the start of every run asks), so a link made before this rule, or one that a pool does not allow, never starts
a task as root.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import InvalidRequest
from stalwart.master.queries import agents as agent_rows
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master

SETTINGS = "security.allow_root_tasks (or resource_pools[].allow_root_tasks) in the master config"


def is_root(uid: object, gid: object) -> bool:
    return uid == 0 or gid == 0


def check_link(m: Master, uid: object, gid: object, where: str) -> None:
    """400 when a link (`where`: the request field, e.g. `agentUserGroup`) names uid 0 or gid 0 and no pool of
    the cluster may run root tasks."""
    if not is_root(uid, gid) or m.settings.cluster.root_tasks_allowed():
        return
    which = "agentUid 0" if uid == 0 else "agentGid 0"
    raise InvalidRequest(
        f"{where}: {which} is root: the tasks it applies to would run as root on the agents. This master does not "
        f"allow root tasks ({SETTINGS} is false): link a non-root uid and gid, or set {SETTINGS} to true to "
        f"allow it")


def start_refusal(m: Master, conn: Conn, run_as: Mapping[str, Any] | None, agent_id: str) -> str | None:
    """Why a run may not start as `run_as` on agent `agent_id` (its pool's rule), or None when it may."""
    if not run_as or not is_root(run_as.get("uid"), run_as.get("gid")):
        return None
    agent = agent_rows.find(conn, agent_id)
    pool = agent["resource_pool"] if agent is not None else None
    if m.settings.cluster.root_tasks_allowed(pool):
        return None
    return (f"the master refused to start this task as OS user {run_as.get('user')} (uid {run_as.get('uid')}, "
            f"gid {run_as.get('gid')}): tasks may not run as root in resource pool {pool} ({SETTINGS}). Link the "
            f"owner or the workspace to a non-root OS user (`stalwart user link-with-agent-user`, `stalwart workspace "
            f"edit --agent-uid ...`), or allow root tasks in that pool")
