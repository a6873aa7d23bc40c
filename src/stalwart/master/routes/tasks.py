"""/api/v1/commands and /api/v1/tasks: run a program on the cluster, list tasks, follow their logs, kill."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json

import sqlalchemy as sa
import yaml
from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.api.states import AllocationState as A
from stalwart.db import tables as t
from stalwart.master import offload
from stalwart.master.routes.common import body, master
from stalwart.master.scheduling import jobs
from stalwart.master.service import Master
from stalwart.master.tasks import commands

router = APIRouter(prefix="/api/v1", tags=["tasks"])


def _task_id(task_id: str) -> int:
    text = task_id.removeprefix("command-")
    if not text.isdigit():
        raise NotFoundError(f"task {task_id} not found; task ids look like 'command-3' or '3' (see `stalwart cmd list`)")
    return int(text)


def _describe(m, cmd_id: int) -> dict:
    with m.db.begin() as conn:
        cmd = Master.get_row(conn, t.commands, cmd_id, "command")
        alloc = commands.allocation_of(conn, cmd_id)
        job = conn.execute(sa.select(t.jobs).where(t.jobs.c.type == jobs.COMMAND, t.jobs.c.entity_id == cmd_id)
                           ).mappings().first()
    return commands.view(cmd, alloc, job["resource_pool"] if job else None)


def _check(m, config: dict, context: str | None) -> tuple[bytes | None, dict]:
    archive = None
    if context:
        try:
            archive = base64.b64decode(context, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidRequest("context: expected a base64-encoded .tgz of the context directory") from None
    return archive, commands.check_command(m, config, archive, read_archive=offload.archive_names)


@router.post("/commands")
async def create(request: Request) -> dict:
    """Body: {config: YAML text or object (with `entrypoint`), context: base64 .tgz (optional), owner}."""
    m = master(request)
    data = await body(request)
    config = data.get("config") or {}
    if isinstance(config, str):
        try:
            config = yaml.safe_load(config) or {}
        except yaml.YAMLError as err:
            raise InvalidRequest(f"config: not valid YAML: {err}") from None
    if not isinstance(config, dict):
        raise InvalidRequest("config: expected a mapping (the command config)")
    context = data.get("context")
    if context and not isinstance(context, str):
        raise InvalidRequest("context: expected a base64-encoded .tgz of the context directory")
    # Off the event loop: decoding a big context, and reading the archive (in a worker process, see offload).
    archive, checked = await asyncio.to_thread(_check, m, config, context or None)
    cmd_id = commands.create_command(m, config, archive, str(data.get("owner") or "determined"), checked=checked)
    return {"command": _describe(m, cmd_id)}


@router.get("/commands/{cmd_id}")
async def describe(request: Request, cmd_id: int) -> dict:
    return {"command": _describe(master(request), cmd_id)}


@router.post("/commands/{cmd_id}/kill")
async def kill(request: Request, cmd_id: int) -> dict:
    m = master(request)
    commands.kill(m, cmd_id)
    return {"command": _describe(m, cmd_id)}


@router.get("/tasks")
async def list_tasks(request: Request, all: bool = False) -> dict:  # noqa: A002 - the query name
    m = master(request)
    with m.db.begin() as conn:
        q = sa.select(t.commands).order_by(t.commands.c.id)
        if not all:
            q = q.where(t.commands.c.state == commands.ACTIVE)
        cmds = conn.execute(q).mappings().all()
        pools = dict(conn.execute(sa.select(t.jobs.c.entity_id, t.jobs.c.resource_pool)
                                  .where(t.jobs.c.type == jobs.COMMAND)).all())
        allocs = {c["id"]: commands.allocation_of(conn, c["id"]) for c in cmds}
    return {"tasks": [commands.view(c, allocs[c["id"]], pools.get(c["id"])) for c in cmds]}


@router.get("/tasks/{task_id}")
async def get_task(request: Request, task_id: str) -> dict:
    return {"task": _describe(master(request), _task_id(task_id))}


def _read(conn, cmd_id: int, after_id: int, limit: int = 5000) -> list[dict]:
    ids = sa.select(t.allocations.c.id).where(t.allocations.c.command_id == cmd_id)
    rows = conn.execute(sa.select(t.task_logs).where(t.task_logs.c.allocation_id.in_(ids), t.task_logs.c.id > after_id)
                        .order_by(t.task_logs.c.id).limit(limit)).mappings()
    return [{k: r[k] for k in ("id", "timestamp", "level", "log", "stdtype", "agent_id", "rank_id", "source")}
            for r in rows]


def _open(m, cmd_id: int) -> bool:
    with m.db.begin() as conn:
        state = conn.execute(sa.select(t.commands.c.state).where(t.commands.c.id == cmd_id)).scalar()
        live = conn.execute(sa.select(sa.func.count()).select_from(t.allocations).where(
            t.allocations.c.command_id == cmd_id, t.allocations.c.state != A.TERMINATED.value)).scalar()
    return state == commands.ACTIVE or live > 0


@router.get("/tasks/{task_id}/logs")
async def logs(request: Request, task_id: str, follow: bool = False, after_id: int = 0) -> StreamingResponse:
    """Newline-delimited JSON log entries (`id`, `timestamp`, `level`, `log`, ...); follow=true stays open
    until the task ends."""
    m = master(request)
    cmd_id = _task_id(task_id)
    with m.db.begin() as conn:
        Master.get_row(conn, t.commands, cmd_id, "task")

    async def stream():
        last = after_id
        while True:
            still_open = follow and _open(m, cmd_id)
            with m.db.begin() as conn:
                rows = _read(conn, cmd_id, last)
            for r in rows:
                last = r["id"]
                yield json.dumps(r) + "\n"
            if rows:
                continue
            if not still_open or await request.is_disconnected():
                return
            await asyncio.sleep(0.25)

    return StreamingResponse(stream(), media_type="application/x-ndjson")
