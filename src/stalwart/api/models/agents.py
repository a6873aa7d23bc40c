"""Agents: enrollment (cluster token) and registration, the action long-poll (the agent's own credential),
listing, enable/disable, credentials (list, revoke), slots, log intake."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

from stalwart.api.models.common import AgentId, AllocationId, Id, JsonObject, Request, Response, Timestamp

SlotCount = Annotated[int, Field(ge=0, le=2**31 - 1, description="a number of slots (a 32-bit column)")]
MAX_AGENT_SLOTS = 4096
AgentSlots = Annotated[int, Field(ge=0, le=MAX_AGENT_SLOTS, description="the slots one agent offers (at most 4096: "
                                                                        "the slot listing names each one)")]


class RegisterAgent(Request):
    agent_id: AgentId
    slots: AgentSlots
    running_allocations: list[AllocationId] = Field(default_factory=list)
    resource_pool: str | None = Field(default=None, max_length=255)
    incarnation: str | None = Field(default=None, max_length=64)
    hostname: str | None = Field(default=None, max_length=255)
    address: str | None = Field(default=None, max_length=255)
    slot_type: str | None = Field(default=None, max_length=16)
    replaces: str | None = Field(default=None, max_length=64)


class Registered(Response):
    agent_id: AgentId
    kill: list[AllocationId]
    cluster_id: str
    agent_timeout: PositiveInt | PositiveFloat = Field(
        description="seconds of silence after which the master counts the agent lost (as configured: an integer "
                    "stays one)")
    credential: str | None = Field(default=None, description="the agent's own credential, given once, when it "
                                                             "enrolls with the cluster token: it presents it from "
                                                             "then on (the master keeps only its SHA-256)")


class AgentCredential(Response):
    """What an admin sees of one agent's credential (never the credential itself)."""

    agent_id: AgentId
    state: str = Field(description="active; revoked; or none: the agent registered before agents had credentials "
                                   "(it gets one at its next registration)")
    created_at: Timestamp | None = None
    last_used: Timestamp | None = Field(default=None, description="when the agent last presented it (to the minute)")
    revoked_at: Timestamp | None = None
    reenroll: bool = Field(default=False, description="revoked, and the id may enroll again with the cluster token")
    registered: bool = Field(description="the agent is in the agent list")


class AgentCredentialList(Response):
    credentials: list[AgentCredential]


class RevokeAgentCredential(Request):
    reenroll: bool = Field(default=False, description="let this agent id enroll again with the cluster token (under "
                                                      "the enrollment policy): for an agent whose credential file was "
                                                      "lost. Without it the id stays cut off for good")


class RevokedAgentCredential(Response):
    credential: AgentCredential


class RunAs(Response):
    """The OS user and group a task runs as (its owner's link, else its workspace's default)."""

    uid: int = Field(ge=0, le=2**31 - 1)
    gid: int = Field(ge=0, le=2**31 - 1)
    user: str = Field(max_length=64)
    group: str = Field(max_length=64)


class ContainerMount(Response):
    """A host directory (or file) seen inside the container."""

    host_path: str
    container_path: str = Field(description="absolute, or relative to the task's working directory")
    read_only: bool = False
    propagation: str = "rprivate"


class ContainerDevice(Response):
    """A host device node seen inside the container."""

    host_path: str
    container_path: str
    cgroup_permissions: str = Field(default="mrw", description="Docker's letters: r(ead), w(rite), m(knod)")


class ContainerOrder(Response):
    """How to run the task in a container, on an agent whose runtime is docker or podman (a process agent runs it
    as a process and reads none of this). The master resolved it: the task's config over its pool's and the
    cluster's `task_container_defaults`, the image chosen for this agent's slot type, checked against the pool's
    `task_container_policy`."""

    image: str | None = Field(default=None, description="none: no image is set anywhere (the config nor defaults)")
    slot_type: str = Field(default="cpu", description="the slot type the image and variables were chosen for: "
                                                       "cpu, cuda or rocm")
    force_pull: bool = False
    registry_auth: dict[str, str] | None = Field(
        default=None, repr=False, description="Docker's auth config for pulling the image. A secret: only the agent "
                                              "gets it, and never logs it")
    bind_mounts: list[ContainerMount] = Field(default_factory=list)
    devices: list[ContainerDevice] = Field(default_factory=list)
    shm_size: int | None = Field(default=None, ge=0, description="bytes of /dev/shm")
    network_mode: Literal["host", "bridge", "none"] = "host"
    add_capabilities: list[str] = Field(default_factory=list)
    drop_capabilities: list[str] = Field(default_factory=list)
    ports: dict[str, int] = Field(default_factory=dict, description="environment.ports: name → container port")
    allow_root: bool = Field(default=False, description="the pool allows root tasks: the container may run as uid 0")


class StartOrder(Response):
    """Everything an agent needs to start one container: entrypoint, environment, the info file."""

    allocation_id: AllocationId
    trial_id: Id | None = None
    command_id: Id | None = None
    slot_ids: list[int]
    entrypoint: Any
    env: dict[str, str]
    info: JsonObject
    run_as: RunAs | None = Field(default=None, description="run as this OS user (an agent that is not root refuses); "
                                                           "none: as the agent's own user")
    container: ContainerOrder | None = Field(default=None, description="how to run it in a container (docker and "
                                                                       "podman agents)")


class Actions(Response):
    start: list[StartOrder]
    kill: list[AllocationId]


class Agent(Response):
    id: AgentId
    hostname: str | None = None
    resource_pool: str
    slots: SlotCount
    slot_type: str
    enabled: bool
    connected: bool
    registered_at: Timestamp | None = None
    last_seen: Timestamp | None = None
    draining: bool
    address: str | None = None
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
    allocation_id: AllocationId | None = None
    task_id: str | None = None


class SlotList(Response):
    slots: list[Slot]


MAX_LOG_TIMESTAMP = 253402300799.0
"""The last second of year 9999 (UTC): a log line's time is seconds since the epoch in 0..MAX_LOG_TIMESTAMP."""
LogTimestamp = Annotated[float, Field(ge=0, le=MAX_LOG_TIMESTAMP, allow_inf_nan=False, strict=True,
                                      description="seconds since the Unix epoch (a JSON number, 0..year 9999)")]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1, strict=True)]


class LogFields(Request):
    """What one line (or run of lines) of task output may say about itself; every field may be left out or null.
    Strict types, as the master's parser (master/log_rows.py) checks them: a number is never a string here."""

    model_config = ConfigDict(strict=True)

    trial_id: Int32 | None = None
    allocation_id: str | None = Field(default=None, max_length=64)
    agent_id: str | None = Field(default=None, max_length=128)
    rank_id: Int32 | None = None
    stdtype: str | None = Field(default=None, max_length=16, description="stdout (the default) or stderr")
    source: str | None = Field(default=None, max_length=32)
    level: str | None = Field(default=None, max_length=16,
                              description="the line's level; by default the one it names at its start, else INFO "
                                          "(ERROR on stderr)")


class LogLine(LogFields):
    """One line, Determined's shape: `timestamp` defaults to when the master receives it."""

    log: str | None = None
    timestamp: LogTimestamp | None = None


class LogRun(LogFields):
    """Consecutive lines of one allocation, rank and stream, as agents send them: `lines` are [timestamp, text]."""

    lines: list[tuple[LogTimestamp, str]]


class TaskLogs(Request):
    """POST /api/v1/task/logs: `logs` (Determined's shape, one object a line) and/or `runs` (agents); at least one."""

    logs: list[LogLine] | None = None
    runs: list[LogRun] | None = None

    @model_validator(mode="after")
    def _some_lines(self) -> TaskLogs:
        if self.logs is None and self.runs is None:
            raise ValueError("logs or runs: give at least one (a list of log entries, or of runs of lines)")
        return self
