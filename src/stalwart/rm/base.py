"""The resource-manager contract: what the master hands a manager (gangs, kills, preemptions) and what it asks back
(a run's state and containers, each pool's capacity, the queue `job list` shows).

The cut (docs/resource-managers.md): the scheduling pass files every run as a PENDING allocation, then hands each
manager the live gangs of its pools (`submit`); the manager places them (our agents: the pure `scheduler.schedule`
and container rows the agents' action long-poll picks up; Slurm: `sbatch`; Kubernetes: pods). What happens to a
container comes back through the master's `allocations.lifecycle` (`mark_started`, `mark_exited`,
`lose_container`), called by the manager's side (the agent routes, a poll of the engine's queue), never decided
here. The state of record stays in the master's database: a manager holds nothing the next pass cannot rebuild."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from stalwart.config.master_schema import RESOURCE_MANAGER_TYPES

SUPPORTED = RESOURCE_MANAGER_TYPES
"""The `resource_manager.type` values this master runs (the master config refuses the others)."""


@dataclass(frozen=True)
class Gang:
    """One live allocation of a pool: all of its slots start together or none do.

    `state` is the master's: PENDING (to place), ASSIGNED or RUNNING (holding its place). The queue keys are the
    job's (`priority` 1..99 lower first, `queue_position`, `submitted_at`). `kill_requested` and
    `preempt_requested` are what the master already asked of it (a manager that reconciles, like Slurm's, acts on
    them in its pass; the agent manager's orders went out when they were asked)."""

    allocation_id: str
    job_id: str
    pool: str
    slots: int
    state: str = "PENDING"
    priority: int = 42
    weight: float = 1.0
    max_slots: int | None = None
    queue_position: float = 0.0
    submitted_at: float = 0.0
    preemptible: bool = True
    preempt_requested: bool = False
    kill_requested: bool = False
    pending_reason: str | None = None
    excluded_nodes: frozenset[str] = frozenset()  # nodes (agents) it may not run on: its log policies' exclude_node


@dataclass(frozen=True)
class NodeContainer:
    """One container of a run: its rank (0 is the chief), the node it runs on (agent id, Slurm node, pod), the
    address its peers reach it at (rendezvous), its slot ids on that node and its state (ASSIGNED, RUNNING,
    KILLING, TERMINATED)."""

    rank: int
    node: str
    address: str
    slot_ids: tuple[int, ...]
    state: str


@dataclass(frozen=True)
class RunStatus:
    """A run as its manager sees it: the allocation's state, its containers in rank order, why it waits (PENDING),
    whether it was asked to preempt or to die, and how it ended (TERMINATED)."""

    allocation_id: str
    state: str
    containers: tuple[NodeContainer, ...] = ()
    pending_reason: str | None = None
    preempt_requested: bool = False
    kill_requested: bool = False
    exit_code: int | None = None
    exit_reason: str | None = None

    @property
    def addresses(self) -> list[str]:
        """The containers' addresses in rank order (what a gang's rendezvous gets)."""
        return [c.address for c in self.containers]


@dataclass(frozen=True)
class PoolCapacity:
    """A pool's size now: its nodes (agents, Slurm nodes, Kubernetes nodes), the slots they have, how many are
    taken, and how many nodes accept new work (not disabled, draining or lost)."""

    pool: str
    nodes: int
    slots_total: int
    slots_used: int
    accepting_nodes: int

    @property
    def slots_free(self) -> int:
        return self.slots_total - self.slots_used


@dataclass(frozen=True)
class QueueEntry:
    """One live run in a manager's queue, as `job list` shows it: its pool, state, slots, whether it was
    backfilled, and (PENDING) the manager's reason it waits."""

    allocation_id: str
    pool: str
    state: str
    slots: int
    backfilled: bool = False
    reason: str | None = None


class ResourceManager(ABC):
    """One kind of engine that runs allocations, serving the pools `resource_manager.type` gives it.

    An instance is opened for one pass or one request (the master's implementations hold its database
    connection); every method works on what the master's rows and the engine say now."""

    type: ClassVar[str]

    @abstractmethod
    def pools(self) -> tuple[str, ...]:
        """The resource pools this manager serves."""

    def reconcile(self) -> None:  # noqa: B027 - optional: a manager with nothing to check keeps this no-op
        """Before each pass: notice what changed on the engine's side that no report told the master (a node
        silent too long is lost: its runs end through `lifecycle.lose_container`)."""

    @abstractmethod
    def submit(self, gangs: Sequence[Gang]) -> None:
        """Place what can start now: `gangs` are every live allocation of this manager's pools (PENDING ones to
        place, in no particular order; the others hold their places). A start is all of a gang or nothing. The
        manager records why each PENDING gang still waits (what `job list` shows) and asks running ones to
        preempt where its policy says so."""

    @abstractmethod
    def kill(self, allocation_id: str) -> None:
        """End the run at once: every container is told to die; it ends KILLED when the last one is gone."""

    @abstractmethod
    def preempt(self, allocation_id: str) -> None:
        """Ask the run to checkpoint and exit; it is re-queued and resumes from its checkpoint, uncounted."""

    @abstractmethod
    def status(self, allocation_id: str) -> RunStatus:
        """The run's state, containers (nodes, addresses, slots) and reasons."""

    @abstractmethod
    def capacity(self) -> list[PoolCapacity]:
        """Every pool of this manager, with its nodes and slots now."""

    @abstractmethod
    def queue(self) -> list[QueueEntry]:
        """The live runs of this manager's pools with their states and pending reasons."""


def serves(manager: ResourceManager, gangs: Sequence[Gang]) -> list[Gang]:
    """The gangs of `manager`'s pools."""
    mine = set(manager.pools())
    return [g for g in gangs if g.pool in mine]
