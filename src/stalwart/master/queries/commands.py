"""Reads and writes of the commands table and the rows hanging off one command (its allocations' log lines)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row, one_or_404

_CMD = t.commands.c
LOG_FIELDS = ("id", "timestamp", "level", "log", "stdtype", "agent_id", "rank_id", "source")
"""The columns of a command's log line as GET /api/v1/tasks/{id}/logs sends them."""


def get(conn: Conn, cmd_id: int, what: str = "command") -> Row:
    """One command; a 404 naming it `what` (command, task) when there is none."""
    return one_or_404(conn, t.commands, cmd_id, what)


def insert(conn: Conn, *, description: str, owner: str, config: dict[str, Any], archive: bytes, state: str,
           created_at: float, project_id: int = 1, kind: str = "command") -> int:
    """Store a new task (a command, or a task of another `kind`) in `project_id`; its id."""
    key = conn.execute(t.commands.insert().values(
        description=description, owner=owner, config=config, archive=archive, state=state,
        created_at=created_at, project_id=project_id, kind=kind)).inserted_primary_key
    assert key is not None
    return int(key[0])


def in_id_order(conn: Conn, state: str | None = None, workspaces: set[int] | None = None,
                kind: str | None = None) -> list[Row]:
    """Every task by id; only those in `state`, in `workspaces` and of `kind` when those are given."""
    q = sa.select(t.commands).order_by(_CMD.id)
    if kind is not None:
        q = q.where(_CMD.kind == kind)
    if state is not None:
        q = q.where(_CMD.state == state)
    if workspaces is not None:
        q = q.where(_CMD.project_id.in_(sa.select(t.projects.c.id).where(t.projects.c.workspace_id.in_(workspaces))))
    return list(conn.execute(q).mappings().all())


def state_of(conn: Conn, cmd_id: int) -> str | None:
    """A command's state; None when there is no such command."""
    state: str | None = conn.execute(sa.select(_CMD.state).where(_CMD.id == cmd_id)).scalar()
    return state


def end_if(conn: Conn, cmd_id: int, current: str, *, state: str, exit_code: int | None, ended_at: float,
           reason: str) -> None:
    """A command still in state `current` ends: its final `state`, exit code and end time, and why it ended (unless
    a reason was noted before its end, see `note_end_reason`)."""
    conn.execute(t.commands.update().where(_CMD.id == cmd_id, _CMD.state == current)
                 .values(state=state, exit_code=exit_code, ended_at=ended_at,
                         end_reason=sa.func.coalesce(_CMD.end_reason, reason)))


def set_ended(conn: Conn, cmd_id: int, *, state: str, ended_at: float, reason: str) -> None:
    """A command ends without having run (its exit code stays unset)."""
    conn.execute(t.commands.update().where(_CMD.id == cmd_id)
                 .values(state=state, ended_at=ended_at, end_reason=reason))


def note_end_reason(conn: Conn, cmd_id: int, reason: str) -> None:
    """Why a running task is being stopped (killed by a user, idle), kept as its end reason once it ends; the
    first reason noted stands."""
    conn.execute(t.commands.update().where(_CMD.id == cmd_id, _CMD.end_reason.is_(None)).values(end_reason=reason))


def running_with_allocations(conn: Conn) -> list[Row]:
    """Each ACTIVE task whose allocation runs (no kill asked): id, kind, config, allocation_id, started_at."""
    a = t.allocations.c
    return list(conn.execute(
        sa.select(_CMD.id, _CMD.kind, _CMD.config, a.id.label("allocation_id"), a.started_at, a.service_port)
        .join(t.allocations, a.command_id == _CMD.id)
        .where(_CMD.state == "ACTIVE", a.state == "RUNNING", a.kill_requested.is_(False))).mappings())


def names(conn: Conn, state: str) -> dict[int, dict[str, Any]]:
    """Command id -> {id, description, owner, kind, workspace_id} of the tasks in `state`."""
    return {r["id"]: dict(r) for r in conn.execute(
        sa.select(_CMD.id, _CMD.description, _CMD.owner, _CMD.kind, t.projects.c.workspace_id)
        .join(t.projects, t.projects.c.id == _CMD.project_id).where(_CMD.state == state)).mappings()}


def places(conn: Conn, cmd_ids: list[int]) -> dict[int, Row]:
    """Each command's project and workspace names ({id, project, workspace})."""
    if not cmd_ids:
        return {}
    q = (sa.select(_CMD.id, t.projects.c.name.label("project"), t.workspaces.c.name.label("workspace"))
         .join(t.projects, t.projects.c.id == _CMD.project_id)
         .join(t.workspaces, t.workspaces.c.id == t.projects.c.workspace_id).where(_CMD.id.in_(cmd_ids)))
    return {int(r["id"]): r for r in conn.execute(q).mappings()}


def log_lines(conn: Conn, cmd_id: int, after_id: int, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` log lines of the command's allocations with ids above `after_id`, in id order."""
    ids = sa.select(t.allocations.c.id).where(t.allocations.c.command_id == cmd_id)
    rows = conn.execute(sa.select(t.task_logs).where(t.task_logs.c.allocation_id.in_(ids), t.task_logs.c.id > after_id)
                        .order_by(t.task_logs.c.id).limit(limit)).mappings()
    return [{k: r[k] for k in LOG_FIELDS} for r in rows]
