"""Commands: any program run on the cluster as a task. A job in the queue, never preempted;
`resources.slots` (default 1, 0 = CPU-only on the aux pool). Its one allocation runs it once."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from typing import Any

from stalwart.api.errors import ConfigError, InvalidStateError
from stalwart.api.states import AllocationState as A, ExitReason
from stalwart.config import secrets
from stalwart.config._schema import Field, Problems, check_section, integer, list_of, number, section, string
from stalwart.config.container_policy import require_allowed
from stalwart.config.environment import check_environment
from stalwart.config.provider import duration
from stalwart.config.sections import BIND_MOUNT_SPEC, RESOURCES_SPEC, slot_count
from stalwart.context import ArchiveLimits, validate_archive
from stalwart.master.allocations import container_orders, lifecycle
from stalwart.master.allocations.env import base_env, owner_session, run_as
from stalwart.master.identity import tokens
from stalwart.master.queries import allocations as allocation_rows, commands as command_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.scheduling import jobs, managers
from stalwart.master.service import Master, new_id, now
from stalwart.master.workspaces import placement

ACTIVE, COMPLETED, ERROR, CANCELED = "ACTIVE", "COMPLETED", "ERROR", "CANCELED"

_RESOURCES = {
    "slots": Field(slot_count, default=1),
    "priority": Field(integer(1, 99)),
    "weight": Field(number(minimum=0), default=1),
    "resource_pool": Field(string(), default=""),
    "max_slots": Field(slot_count),
    "shm_size": RESOURCES_SPEC["shm_size"],  # the container keys, as an experiment's (config/sections.py)
    "devices": RESOURCES_SPEC["devices"],
}
_LOOSE = Field(lambda v, p, pr: v)  # Determined task keys Stalwart accepts and does not use
COMMAND_SPEC = {
    "entrypoint": Field(list_of(string(), nonempty=True), required=True,
                        required_message="required: give the program to run after the options"),
    "description": Field(string(), default=""),
    "resources": Field(lambda v, p, pr: check_section(v, p, _RESOURCES, pr), default=lambda: {"slots": 1}),
    "environment": Field(check_environment, default=dict),  # image, registry_auth, ... as an experiment's
    "bind_mounts": Field(list_of(section(BIND_MOUNT_SPEC)), default=list),
    "workspace": Field(string(), default=""),  # with `project`: where the command goes (else Uncategorized)
    "project": Field(string(), default=""),
    "tensorboard": Field(section({"experiment_ids": Field(list_of(integer(1)), default=list),  # a TensorBoard's,
                                  "trial_ids": Field(list_of(integer(1)), default=list)})),  # tasks/tensorboards.py
    "idle_timeout": Field(duration()),  # tasks/idle.py: stopped after this long unused (30s, 20m, 1h; 0: never)
    **{k: _LOOSE for k in ("debug", "work_dir", "notebook_idle_type", "pbs", "slurm",
                           "tensorboard_args", "data")},
}

INFO_EXTRAS: dict[str, Callable[[Conn, Row], dict[str, Any]]] = {}
"""Per task kind, what its start order's info file adds (a TensorBoard's storages: tasks/tensorboards.py)."""


def _empty_archive() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz"):
        pass
    return buf.getvalue()


def check_command(m: Master, config: dict[str, Any], archive: bytes | None, *,
                  read_archive: Callable[[bytes, ArchiveLimits], list[str]] | None = None) -> dict[str, Any]:
    """The command config checked (defaults filled) and its archive validated. No database work: the create
    route runs it in a worker thread, off the event loop, with `read_archive` reading the archive in a worker
    process."""
    problems = Problems()
    cfg = check_section(config, "", COMMAND_SPEC, problems)
    if problems:
        first, *rest = problems.details
        raise ConfigError(f"invalid command config: {first}", details=rest)
    cfg = secrets.restore(cfg, None, "a new command")  # a placeholder is never saved as a secret
    res = cfg["resources"] or {}
    jobs.resolve_pool(m, res.get("resource_pool") or None, _slots(res))
    if archive is not None:
        if read_archive is None:
            validate_archive(archive, limits=m.settings.context_limits)
        else:
            read_archive(archive, m.settings.context_limits)
    cfg["description"] = cfg["description"] or f"Command ({' '.join(cfg['entrypoint'])[:80]})"
    return cfg


def _slots(res: dict[str, Any]) -> int:
    slots = res.get("slots")
    return 1 if slots is None else int(slots)


def create_command(m: Master, config: dict[str, Any], archive: bytes | None, owner: str, *,
                   checked: dict[str, Any] | None = None, project: Row | None = None, kind: str = "command") -> int:
    """Store a new task of `kind` (TASK_KINDS) and its allocation in `project` (Uncategorized when None);
    `checked` is what `check_command` returned, if it ran already (a notebook, TensorBoard or shell is a command
    whose entrypoint its own module made)."""
    cfg = checked if checked is not None else check_command(m, config, archive)
    res = cfg["resources"] or {}
    slots = _slots(res)
    pool = jobs.resolve_pool(m, res.get("resource_pool") or None, slots)
    with m.db.begin() as conn:
        project = project or placement.project_for(conn, {})
        pool = placement.pool_for(conn, project, res.get("resource_pool"), pool, slots)
        require_allowed(cfg, m.settings.cluster.container_policy(pool))  # 400 naming the key and the allow-list
        managers.check_new_work(m, conn, cfg, pool, owner, project["id"])  # a Slurm pool: an OS user to run as
        cmd_id = command_rows.insert(
            conn, description=cfg["description"][:512], owner=owner, config=cfg, archive=archive or _empty_archive(),
            state=ACTIVE, created_at=now(), project_id=project["id"], kind=kind)
        jobs.create_job(m, conn, jobs.COMMAND, cmd_id, res, pool)
        allocation_rows.insert_pending(conn, new_id(), trial_id=None, command_id=cmd_id, run_id=1, slots=slots,
                                       created_at=now())
    m.wake_scheduler()
    return cmd_id


def allocation_of(conn: Conn, cmd_id: int) -> Row | None:
    """The command's allocation (its newest, should there be more), or None."""
    return allocation_rows.latest_of_command(conn, cmd_id)


def allocation_ended(m: Master, conn: Conn, alloc: Row, exit_code: int | None, reason: ExitReason) -> None:
    """A command runs once: its end (or its agent's loss, or its container's failed set-up) ends the command,
    with the reason in words (a reason noted before, such as "killed by alice" or its idle timeout, stands)."""
    if alloc["kill_requested"] or reason is ExitReason.KILLED:
        state, why = CANCELED, "killed"
    elif reason is ExitReason.SETUP_FAILED:
        state, why = ERROR, "its container could not be set up (see its log)"
    elif reason is ExitReason.AGENT_LOST:
        state, why = ERROR, f"its agent {alloc['agent_id']} was lost"
    elif exit_code == 0:
        state, why = COMPLETED, "exited with status 0"
    else:
        state, why = ERROR, f"exited with status {exit_code}"
    command_rows.end_if(conn, alloc["command_id"], ACTIVE, state=state, exit_code=exit_code, ended_at=now(),
                        reason=why)


def kill(m: Master, cmd_id: int, reason: str = "killed") -> None:
    """Stop a task (`reason`, such as "killed by alice", becomes its end reason); 409 once it has ended."""
    with m.db.begin() as conn:
        cmd = command_rows.get(conn, cmd_id)
        if cmd["state"] != ACTIVE:
            raise InvalidStateError(f"{cmd['kind'] or 'command'} {cmd_id} is already {cmd['state']}")
        alloc = allocation_of(conn, cmd_id)
        if alloc is None or alloc["state"] == A.PENDING.value:
            if alloc is not None:
                lifecycle.allocation_exited(m, conn, alloc["id"], None, ExitReason.KILLED)
            command_rows.set_ended(conn, cmd_id, state=CANCELED, ended_at=now(), reason=f"{reason} before it started")
            return
        command_rows.note_end_reason(conn, cmd_id, reason)
        lifecycle.request_kill(m, conn, alloc)


def view(cmd: Row, alloc: Row | None, pool: str | None, place: Row | None = None) -> dict[str, Any]:
    """A command as the API shows it; `place`: its workspace and project names (queries.commands.places)."""
    state = alloc["state"] if alloc is not None and cmd["state"] == ACTIVE else "TERMINATED"
    return {"id": cmd["id"], "type": (cmd["kind"] or "command").upper(), "description": cmd["description"],
            "state": state,
            "owner": cmd["owner"], "project_id": cmd["project_id"], "resource_pool": pool,
            "workspace": place["workspace"] if place else None, "project": place["project"] if place else None,
            "created_at": cmd["created_at"], "ended_at": cmd["ended_at"], "exit_code": cmd["exit_code"],
            "result": cmd["state"], "end_reason": cmd["end_reason"],
            "entrypoint": cmd["config"].get("entrypoint"), "kind": cmd["kind"] or "command",
            "proxy_path": _proxy_path(cmd, alloc),
            "pending_reason": alloc["pending_reason"] if alloc is not None else None}


def _proxy_path(cmd: Row, alloc: Row | None) -> str | None:
    """Where the task's server is reached through the master, while its allocation runs one."""
    if alloc is None or alloc["state"] != A.RUNNING.value or alloc["service_port"] is None:
        return None
    return f"/proxy/{cmd['kind'] or 'command'}-{cmd['id']}/"


def start_order(m: Master, conn: Conn, alloc: Row, container: dict[str, Any]) -> dict[str, Any]:
    cmd = command_rows.get(conn, alloc["command_id"])
    cfg = cmd["config"]
    part = container_orders.for_container(m, conn, cfg, container)  # ContainerRefused: the pool's policy
    token = m.allocation_token(alloc["id"])
    kind = cmd["kind"] or "command"
    task_id = f"{kind}-{cmd['id']}"  # also its path under the master's proxy
    user_token = owner_session(m, conn, alloc, cmd["owner"])
    env = base_env(m, alloc, token, cmd["owner"], task_id, kind.upper(), container, user_token)
    env["DET_SLOT_TYPE"] = part.slot_type
    env["STALWART_SERVICE_TOKEN"] = tokens.service_token(m.secret, alloc["id"])  # what the proxy sends its server
    env.update(part.variables)
    info = {"master_url": m.settings.url, "cluster_id": m.cluster_id, "agent_id": container["agent_id"],
            "slot_ids": list(container["slot_ids"] or []), "task_id": task_id, "allocation_id": alloc["id"],
            "session_token": token, "user_token": user_token, "task_type": kind.upper(), "latest_checkpoint": None,
            "trial": None, "entrypoint": cfg["entrypoint"]}
    if kind in INFO_EXTRAS:
        info.update(INFO_EXTRAS[kind](conn, cmd))
    return {"allocation_id": alloc["id"], "trial_id": None, "slot_ids": list(container["slot_ids"] or []),
            "entrypoint": cfg["entrypoint"], "env": env, "info": info,
            "run_as": run_as(conn, cmd["owner"], cmd["project_id"]), "container": part.container}
