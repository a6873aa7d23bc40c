"""Value types of the scheduler: what it is told (requests, agents, policies) and what it answers (a Decision)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Container = tuple[str, tuple[int, ...]]
"""One container of an allocation: (agent id, slot ids on that agent)."""


@dataclass(frozen=True)
class Request:
    """An allocation, pending (no `containers`) or running (its containers hold slots).

    Ordering keys are the job's: `priority` (1..99, lower first), `queue_position`, `submitted_at`.
    """

    allocation_id: str
    job_id: str
    slots: int
    resource_pool: str = "default"
    priority: int = 42
    weight: float = 1.0
    max_slots: int | None = None
    queue_position: float = 0.0
    submitted_at: float = 0.0
    preemptible: bool = True
    containers: tuple[Container, ...] = ()
    preempting: bool = False  # already asked to release its slots; still holds them
    excluded_agents: frozenset[str] = frozenset()  # agents it may not be placed on (log policies' exclude_node)

    @property
    def order(self) -> tuple[Any, ...]:
        return (self.priority, self.queue_position, self.submitted_at, self.allocation_id)


@dataclass(frozen=True)
class AgentState:
    agent_id: str
    resource_pool: str
    total_slots: int
    free_slot_ids: tuple[int, ...]
    accepting: bool = True  # False for disabled, draining or disconnected agents


@dataclass(frozen=True)
class PoolPolicy:
    """A pool's scheduler section: `type` priority|fair_share, `fitting_policy` best|worst, `preemption`."""

    type: str = "priority"
    fitting_policy: str = "best"
    preemption: bool = False


@dataclass(frozen=True)
class Start:
    allocation_id: str
    containers: tuple[Container, ...]
    backfilled: bool = False


@dataclass
class Decision:
    starts: list[Start] = field(default_factory=list)
    preemptions: list[str] = field(default_factory=list)
    unschedulable: dict[str, str] = field(default_factory=dict)  # allocation id → why it can never start
