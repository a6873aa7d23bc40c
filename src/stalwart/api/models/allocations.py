"""Allocations (a trial's or command's run): preemption (trial side), context, started, exited (agent side)."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from stalwart.api.models.common import AgentId, AllocationId, Id, Request, Response, RunId, Timestamp
from stalwart.api.states import AllocationState, ExitReason


class Allocation(Response):
    id: AllocationId
    trial_id: Optional[Id] = None
    run_id: Optional[RunId] = None
    agent_id: Optional[AgentId] = None
    slots: int = Field(ge=0)
    slot_ids: Optional[list[int]] = None
    state: AllocationState
    pid: Optional[int] = None
    preempt_requested: bool
    kill_requested: bool
    exit_code: Optional[int] = None
    exit_reason: Optional[ExitReason] = None
    created_at: Timestamp
    started_at: Optional[Timestamp] = None
    ended_at: Optional[Timestamp] = None
    command_id: Optional[Id] = None
    backfilled: Optional[bool] = None
    pending_reason: Optional[str] = None


class Preemption(Response):
    preempt: bool


class Context(Response):
    b64Tgz: str


class Started(Request):
    agent_id: AgentId
    pid: Optional[int] = None


class StartedAnswer(Response):
    kill: bool = Field(description="true: the agent must kill the process it just started")


class Exited(Request):
    agent_id: AgentId
    exit_code: Optional[int] = None
    agent_lost: bool = False
