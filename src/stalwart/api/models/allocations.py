"""Allocations (a trial's or command's run): preemption (trial side), context, started, exited (agent side)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from stalwart.api.models.common import AgentId, AllocationId, Id, Request, Response, RunId, Timestamp
from stalwart.api.states import AllocationState, ExitReason


class Allocation(Response):
    id: AllocationId
    trial_id: Id | None = None
    run_id: RunId | None = None
    agent_id: AgentId | None = None
    slots: int = Field(ge=0)
    slot_ids: list[int] | None = None
    state: AllocationState
    pid: int | None = None
    preempt_requested: bool
    kill_requested: bool
    exit_code: int | None = None
    exit_reason: ExitReason | None = None
    created_at: Timestamp
    started_at: Timestamp | None = None
    ended_at: Timestamp | None = None
    command_id: Id | None = None
    backfilled: bool | None = None
    pending_reason: str | None = None


class Preemption(Response):
    preempt: bool


class Context(Response):
    b64Tgz: str


Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1, description="a 32-bit integer column")]


class Started(Request):
    agent_id: AgentId
    pid: Int32 | None = None


class ServiceStarted(Request):
    """A task's server answers: where, on the agent that runs the task (the host is the agent's, never the task's
    to choose)."""

    port: Annotated[int, Field(ge=1, le=65535, description="the TCP port the task's server listens on")]


class StartedAnswer(Response):
    kill: bool = Field(description="true: the agent must kill the process it just started")


class Exited(Request):
    agent_id: AgentId
    exit_code: Int32 | None = Field(default=None, description="the process's exit status (negative: killed by signal)")
    agent_lost: bool = False
    setup_failed: bool = Field(default=False, description="the task never ran: its container could not be set up "
                                                          "(the image could not be pulled, or cannot run the "
                                                          "harness); the agent's message is in the task's log")
