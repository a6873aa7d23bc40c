"""Idle timeouts: a task nobody uses stops by itself and frees its slots.

A task's `idle_timeout` (`30m`, `1h`, or seconds; when it gives none, the master config's `tensorboard_timeout`,
default 5m, or `notebook_timeout`, default none) counts from the last time it was in use: traffic to it through the
master's proxy (HTTP requests, WebSocket sessions opening and closing), or its own report (`POST
/api/v1/allocations/{id}/activity`: a notebook's kernels or terminals by its `notebook_idle_type`, a shell's open
SSH sessions; see harness/service.py), or else from when its server answered, or its start. Activity is kept in
memory (`Master.task_activity`): after a restart of the master a task's clock starts over, which only gives it more
time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from stalwart.config.provider import duration_s
from stalwart.master.queries import commands as command_rows
from stalwart.master.queries.rows import Row
from stalwart.master.service import Master
from stalwart.master.tasks import commands

log = logging.getLogger(__name__)

CHECK_EVERY_S = 2.0
"""How often the master looks for idle tasks (a task may outlive its timeout by this much)."""


def note_activity(m: Master, allocation_id: str) -> None:
    """The task of `allocation_id` is in use now."""
    m.task_activity[allocation_id] = time.time()


def note_traffic(m: Master, task_id: str, allocation_id: str) -> None:
    """Traffic through the proxy to `task_id`: its activity, except a notebook's, whose own probe decides by its
    `notebook_idle_type` (an open browser tab polls JupyterLab without anyone using it)."""
    if not task_id.startswith("notebook-"):
        note_activity(m, allocation_id)


def timeout_of(m: Master, kind: str, config: dict[str, Any]) -> float | None:
    """A task's idle timeout in seconds; None: it never idles out."""
    given = config.get("idle_timeout")
    if given is None:
        given = {"tensorboard": m.settings.cluster.tensorboard_timeout,
                 "notebook": m.settings.cluster.notebook_timeout}.get(kind)
    seconds = duration_s(given) if given is not None else None
    return seconds or None  # 0: never


def _words(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _running_tasks(m: Master) -> list[Row]:
    with m.db.begin() as conn:
        return command_rows.running_with_allocations(conn)


def idle_tasks(m: Master, now: float) -> list[tuple[int, str]]:
    """(task id, why) for each running task idle for longer than its timeout."""
    idle = []
    for task in _running_tasks(m):
        timeout = timeout_of(m, task["kind"] or "command", task["config"] or {})
        if timeout is None or (task["kind"] not in (None, "command") and task["service_port"] is None):
            continue  # a notebook, TensorBoard or shell idles only once its server answers
        last = max(task["started_at"] or now, m.task_activity.get(task["allocation_id"], 0.0))
        if now - last > timeout:
            idle.append((task["id"], f"idle for more than {_words(timeout)} (its idle_timeout)"))
    return idle


def stop_idle(m: Master) -> None:
    """Stop every task idle for longer than its timeout, saying so as its end reason."""
    for task_id, why in idle_tasks(m, time.time()):
        log.info("stopping task %d: %s", task_id, why)
        try:
            commands.kill(m, task_id, why)
        except Exception:  # ended meanwhile (409), or a database hiccup: the next pass sees it again
            log.debug("could not stop idle task %d", task_id, exc_info=True)


async def run_forever(m: Master) -> None:
    while True:
        try:
            await asyncio.to_thread(stop_idle, m)
        except Exception:
            log.exception("idle-task pass failed")
        await asyncio.sleep(CHECK_EVERY_S)
