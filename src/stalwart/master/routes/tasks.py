"""/api/v1/commands and /api/v1/tasks: run a program on the cluster, list tasks, follow their logs, kill."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

import yaml
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.api.models.common import MAX_ID
from stalwart.api.models.tasks import Command, CommandEnvelope, CreateCommand, TaskEnvelope, TaskList
from stalwart.config import secrets
from stalwart.master import offload
from stalwart.master.identity import authz
from stalwart.master.queries import allocations as allocation_rows, commands as command_rows, jobs as job_rows
from stalwart.master.routes.common import AfterId, IdPath, master, owner_of_new
from stalwart.master.routes.contract import route
from stalwart.master.scheduling import jobs
from stalwart.master.service import Master
from stalwart.master.tasks import commands
from stalwart.master.templates import expansion
from stalwart.master.workspaces import placement

router = APIRouter(prefix="/api/v1", tags=["tasks"])

TaskPath = Annotated[str, Path(min_length=1, max_length=64, description="a task id: 'command-3', or '3'")]
ShowAll = Annotated[bool, Query(alias="all", description="also the tasks that have ended")]
Follow = Annotated[bool, Query(description="stay open, sending new lines, until the task ends")]
LOG_PAGE = 5000
"""Log lines read per query while streaming a task's log."""


def _task_id(task_id: str) -> int:
    """The command id of a task id ('command-3' or '3'): 404 for what is no task id, 400 for one out of range."""
    text = task_id.removeprefix("command-")
    if not (text.isascii() and text.isdigit()):
        raise NotFoundError(f"task {task_id} not found; task ids look like 'command-3' or '3' "
                            "(see `stalwart cmd list`)")
    cmd_id = int(text)
    if cmd_id > MAX_ID:
        raise InvalidRequest(f"task_id: {task_id!r} is out of range: a task's number is at most {MAX_ID}")
    return cmd_id


def _describe(m: Master, cmd_id: int) -> Command:
    with m.db.begin() as conn:
        cmd = command_rows.get(conn, cmd_id)
        alloc = commands.allocation_of(conn, cmd_id)
        pool = job_rows.pool_of(conn, jobs.COMMAND, cmd_id)
        place = command_rows.places(conn, [cmd_id]).get(cmd_id)
    return Command.model_validate({**commands.view(cmd, alloc, pool, place), "config": secrets.redact(cmd["config"])})


def _check(m: Master, config: dict[str, Any], context: str | None) -> tuple[bytes | None, dict[str, Any]]:
    archive = None
    if context:
        try:
            archive = base64.b64decode(context, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidRequest("context: expected a base64-encoded .tgz of the context directory") from None
    return archive, commands.check_command(m, config, archive, read_archive=offload.archive_names)


def _config(given: str | dict[str, Any]) -> dict[str, Any]:
    """The command config from the body: a mapping, or YAML text of one."""
    config: Any = given
    if isinstance(config, str):
        try:
            config = yaml.safe_load(config) or {}
        except yaml.YAMLError as err:
            raise InvalidRequest(f"config: not valid YAML: {err}") from None
    if not isinstance(config, dict):
        raise InvalidRequest("config: expected a mapping (the command config)")
    return config


@route(router, "POST", "/commands")
async def create(request: Request, payload: CreateCommand) -> CommandEnvelope:
    """config: YAML text or a mapping (with `entrypoint`); context: base64 .tgz (optional); owner."""
    m = master(request)
    owner = owner_of_new(request, payload.owner)
    # a template is merged under the config once, here: the merged config is what the command stores
    config = expansion.expand(m, request.state.identity, payload.template, _config(payload.config),
                              keys=commands.COMMAND_SPEC)
    # Off the event loop: decoding a big context, and reading the archive (in a worker process, see offload).
    archive, checked = await asyncio.to_thread(_check, m, config, payload.context or None)
    with m.db.begin() as conn:  # the config's workspace and project (else Uncategorized); it needs create_commands
        project = placement.project_for(conn, checked)
    authz.require(m, request.state.identity, P.CREATE_COMMANDS, placement.target(project))
    cmd_id = commands.create_command(m, config, archive, owner, checked=checked, project=project)
    return CommandEnvelope(command=_describe(m, cmd_id))


@route(router, "GET", "/commands/{cmd_id}")
async def describe(request: Request, cmd_id: IdPath) -> CommandEnvelope:
    return CommandEnvelope(command=_describe(master(request), cmd_id))


@route(router, "POST", "/commands/{cmd_id}/kill")
async def kill(request: Request, cmd_id: IdPath) -> CommandEnvelope:
    m = master(request)
    commands.kill(m, cmd_id)
    return CommandEnvelope(command=_describe(m, cmd_id))


@route(router, "GET", "/tasks")
async def list_tasks(request: Request, show_all: ShowAll = False) -> TaskList:
    """The tasks of the workspaces the caller may view tasks in."""
    m = master(request)
    seen = authz.viewable_workspaces(m, request.state.identity, P.VIEW_TASKS)
    with m.db.begin() as conn:
        cmds = command_rows.in_id_order(conn, None if show_all else commands.ACTIVE, seen)
        pools = job_rows.pools_by_entity(conn, jobs.COMMAND)
        allocs = {c["id"]: commands.allocation_of(conn, c["id"]) for c in cmds}
        places = command_rows.places(conn, [c["id"] for c in cmds])
    return TaskList(tasks=[Command.model_validate(commands.view(c, allocs[c["id"]], pools.get(c["id"]),
                                                                places.get(c["id"]))) for c in cmds])


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
