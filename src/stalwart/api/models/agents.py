"""Agents: registration and the action long-poll (cluster token), listing, enable/disable, slots, log intake."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field

from stalwart.api.models.common import (
    AgentId, AllocationId, Id, JsonObject, Request, Response, Timestamp,
)


class RegisterAgent(Request):
    agent_id: AgentId
    slots: int = Field(ge=0)
    running_allocations: list[AllocationId] = Field(default_factory=list)
    resource_pool: Optional[str] = Field(default=None, max_length=255)
    incarnation: Optional[str] = Field(default=None, max_length=64)
    hostname: Optional[str] = Field(default=None, max_length=255)
    address: Optional[str] = Field(default=None, max_length=255)
    slot_type: Optional[str] = Field(default=None, max_length=16)
    replaces: Optional[str] = Field(default=None, max_length=64)


class Registered(Response):
    agent_id: AgentId
    kill: list[AllocationId]
    cluster_id: str
    agent_timeout: float = Field(gt=0)


class StartOrder(Response):
    """Everything an agent needs to start one container: entrypoint, environment, the info file."""

    allocation_id: AllocationId
    trial_id: Optional[Id] = None
    command_id: Optional[Id] = None
    slot_ids: list[int]
    entrypoint: Any
    env: dict[str, str]
    info: JsonObject


class Actions(Response):
    start: list[StartOrder]
    kill: list[AllocationId]


class Agent(Response):
    id: AgentId
    hostname: Optional[str] = None
    resource_pool: str
    slots: int = Field(ge=0)
    slot_type: str
    enabled: bool
    connected: bool
    registered_at: Optional[Timestamp] = None
    last_seen: Optional[Timestamp] = None
    draining: bool
    address: Optional[str] = None
    used_slots: int = Field(ge=0)


class AgentList(Response):
    agents: list[Agent]


class AgentEnvelope(Response):
    agent: Agent


class DisableAgent(Request):
    drain: bool = False


class Slot(Response):
    agent_id: AgentId
    slot_id: int = Field(ge=0)
    type: str
    enabled: bool
    draining: bool
    allocation_id: Optional[AllocationId] = None
    task_id: Optional[str] = None


class SlotList(Response):
    slots: list[Slot]


class LogRun(Request):
    """Lines of one allocation, rank and stream, as agents send them: `lines` are [timestamp, text]."""

    allocation_id: AllocationId
    trial_id: Optional[Id] = None
    agent_id: Optional[AgentId] = None
    rank_id: Optional[int] = None
    stdtype: Optional[str] = None
    source: Optional[str] = None
    level: Optional[str] = None
    lines: list[tuple[float, str]]


class TaskLogs(Request):
    """POST /api/v1/task/logs: `logs` (Determined's shape, one object a line) and/or `runs` (agents)."""

    logs: list[JsonObject] = Field(default_factory=list)
    runs: list[LogRun] = Field(default_factory=list)
