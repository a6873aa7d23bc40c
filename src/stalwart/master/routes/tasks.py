"""/api/v1/commands and /api/v1/tasks: run a program on the cluster, list tasks, follow their logs, kill."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse

from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.api.models.common import MAX_ID
from stalwart.api.models.tasks import Command, CommandEnvelope, CreateCommand, TaskEnvelope, TaskList
from stalwart.api.states import TASK_KINDS
from stalwart.master.queries import allocations as allocation_rows, commands as command_rows
from stalwart.master.routes.common import AfterId, IdPath, master, owner_of_new
from stalwart.master.routes.contract import route
from stalwart.master.service import Master
from stalwart.master.tasks import commands, listing, starting

router = APIRouter(prefix="/api/v1", tags=["tasks"])

TaskPath = Annotated[str, Path(min_length=1, max_length=64, description="a task id: 'command-3', or '3'")]
ShowAll = Annotated[bool, Query(alias="all", description="also the tasks that have ended")]
Follow = Annotated[bool, Query(description="stay open, sending new lines, until the task ends")]
LOG_PAGE = 5000
"""Log lines read per query while streaming a task's log."""


def _task_id(task_id: str) -> int:
    """The row id of a task id ('notebook-3', 'command-3' or '3'): 404 for what is no task id, 400 for one out of
    range."""
    kind, _, text = task_id.rpartition("-")
    if kind not in ("", *TASK_KINDS) or not (text.isascii() and text.isdigit()):
        raise NotFoundError(f"task {task_id} not found; task ids look like 'notebook-3', 'command-3' or '3' "
                            "(see `stalwart cmd list`)")
    cmd_id = int(text)
    if cmd_id > MAX_ID:
        raise InvalidRequest(f"task_id: {task_id!r} is out of range: a task's number is at most {MAX_ID}")
    return cmd_id


def _describe(m: Master, cmd_id: int) -> Command:
    return Command.model_validate(listing.describe(m, cmd_id))


@route(router, "POST", "/commands")
async def create(request: Request, payload: CreateCommand) -> CommandEnvelope:
    """config: YAML text or a mapping (with `entrypoint`); context: base64 .tgz (optional); owner."""
    m = master(request)
    owner = owner_of_new(request, payload.owner)
    cmd_id = await starting.start(m, request.state.identity, owner, starting.config_of(payload.config),
                                  template=payload.template, context=payload.context or None)
    return CommandEnvelope(command=_describe(m, cmd_id))


@route(router, "GET", "/commands/{cmd_id}")
async def describe(request: Request, cmd_id: IdPath) -> CommandEnvelope:
    return CommandEnvelope(command=_describe(master(request), cmd_id))


@route(router, "POST", "/commands/{cmd_id}/kill")
async def kill(request: Request, cmd_id: IdPath) -> CommandEnvelope:
    m = master(request)
    commands.kill(m, cmd_id, f"killed by {request.state.identity.username}")
    return CommandEnvelope(command=_describe(m, cmd_id))


@route(router, "GET", "/tasks")
async def list_tasks(request: Request, show_all: ShowAll = False) -> TaskList:
    """The tasks of the workspaces the caller may view tasks in."""
    tasks = listing.visible(master(request), request.state.identity, show_all=show_all)
    return TaskList(tasks=[Command.model_validate(t) for t in tasks])


@route(router, "GET", "/tasks/{task_id}")
async def get_task(request: Request, task_id: TaskPath) -> TaskEnvelope:
    return TaskEnvelope(task=_describe(master(request), _task_id(task_id)))


def _open(m: Master, cmd_id: int) -> bool:
    with m.db.begin() as conn:
        state = command_rows.state_of(conn, cmd_id)
        live = allocation_rows.live_count_of_command(conn, cmd_id)
    return state == commands.ACTIVE or live > 0


@route(router, "GET", "/tasks/{task_id}/logs")
async def logs(request: Request, task_id: TaskPath, follow: Follow = False, after_id: AfterId = 0
               ) -> StreamingResponse:
    """Newline-delimited JSON log entries (`id`, `timestamp`, `level`, `log`, ...); follow=true stays open
    until the task ends."""
    m = master(request)
    cmd_id = _task_id(task_id)
    with m.db.begin() as conn:
        command_rows.get(conn, cmd_id)  # "command N not found", as `cmd kill N` says

    async def stream() -> AsyncIterator[str]:
        last = after_id
        while True:
            still_open = follow and _open(m, cmd_id)
            with m.db.begin() as conn:
                rows = command_rows.log_lines(conn, cmd_id, last, LOG_PAGE)
            for r in rows:
                last = r["id"]
                yield json.dumps(r) + "\n"
            if rows:
                continue
            if not still_open or await request.is_disconnected():
                return
            await asyncio.sleep(0.25)

    return StreamingResponse(stream(), media_type="application/x-ndjson")
