"""The task kinds that own allocations: each registers what its run's start order is and what a run's end means.

`allocations` never imports a domain: the experiments domain registers the trial kind and the tasks domain the
command kind when they are imported (their packages' `__init__`), and `allocations` dispatches through here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stalwart.api.states import ExitReason
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master

TRIAL, COMMAND, UNMANAGED_TRIAL = "trial", "command", "unmanaged_trial"


@dataclass(frozen=True)
class TaskKind:
    """What allocations need from the domain that owns a kind of task."""

    name: str
    start_order: Callable[[Master, Conn, Row, dict[str, Any]], dict[str, Any]]
    """(m, conn, allocation row, container row) → everything an agent needs to launch that container."""
    on_ended: Callable[[Master, Conn, Row, int | None, ExitReason], None]
    """(m, conn, allocation row as it was, exit code, reason): the run has ended; move the task on."""


_KINDS: dict[str, TaskKind] = {}


def register(kind: TaskKind) -> None:
    """Register (or replace, when a module is reloaded) the handlers of one task kind."""
    _KINDS[kind.name] = kind


def kind_of(alloc: Row) -> str | None:
    """Which kind of task an allocation runs: a command's, a trial's, a detached script's trial's, or none."""
    if alloc.get("unmanaged"):
        return UNMANAGED_TRIAL
    if alloc["command_id"] is not None:
        return COMMAND
    if alloc["trial_id"] is not None:
        return TRIAL
    return None


def get(name: str) -> TaskKind:
    try:
        return _KINDS[name]
    except KeyError:
        raise RuntimeError(f"no handlers for {name} allocations are registered: import the domain that owns them "
                           "(stalwart.master.experiments for trials, stalwart.master.tasks for commands) before "
                           "starting or ending one") from None
