"""Tasks as the API shows them, for the routes of every kind (/api/v1/commands, /notebooks, /tensorboards, /shells,
/tasks): one task by id (404 when it is of another kind) and the tasks a caller may see."""

from __future__ import annotations

from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import NotFoundError
from stalwart.config import secrets
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import commands as command_rows, jobs as job_rows
from stalwart.master.scheduling import jobs
from stalwart.master.service import Master
from stalwart.master.tasks import commands


def describe(m: Master, task_id: int, kind: str | None = None) -> dict[str, Any]:
    """One task with its config (secrets hidden); with `kind`, a task of another kind is not found."""
    with m.db.begin() as conn:
        task = command_rows.get(conn, task_id, kind or "task")
        if kind is not None and (task["kind"] or "command") != kind:
            raise NotFoundError(f"{kind} {task_id} not found: task {task_id} is a {task['kind']} "
                                f"(see `stalwart {task['kind']} list`)")
        alloc = commands.allocation_of(conn, task_id)
        pool = job_rows.pool_of(conn, jobs.COMMAND, task_id)
        place = command_rows.places(conn, [task_id]).get(task_id)
    return {**commands.view(task, alloc, pool, place), "config": secrets.redact(task["config"])}


def kill(m: Master, task_id: int, kind: str, by: str) -> dict[str, Any]:
    """Stop a task of `kind` (404 for a task of another kind, 409 once it has ended) as `by` asked; the task after."""
    describe(m, task_id, kind)
    commands.kill(m, task_id, f"killed by {by}")
    return describe(m, task_id, kind)


def visible(m: Master, ident: Identity, *, show_all: bool, kind: str | None = None) -> list[dict[str, Any]]:
    """The tasks (of `kind`, when given) in the workspaces `ident` may view tasks in; ended ones with `show_all`."""
    seen = authz.viewable_workspaces(m, ident, P.VIEW_TASKS)
    with m.db.begin() as conn:
        rows = command_rows.in_id_order(conn, None if show_all else commands.ACTIVE, seen, kind)
        pools = job_rows.pools_by_entity(conn, jobs.COMMAND)
        allocs = {r["id"]: commands.allocation_of(conn, r["id"]) for r in rows}
        places = command_rows.places(conn, [r["id"] for r in rows])
    return [commands.view(r, allocs[r["id"]], pools.get(r["id"]), places.get(r["id"])) for r in rows]
