"""First-come placement with gang semantics: an allocation gets all of its slots on one agent or waits."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PendingAllocation:
    allocation_id: str
    slots: int
    submitted_at: float
    priority: int = 42
    resource_pool: str = "default"


@dataclass
class AgentCapacity:
    agent_id: str
    free_slot_ids: list[int]
    resource_pool: str = "default"
    enabled: bool = True
    total_slots: int = field(default=0)


@dataclass(frozen=True)
class Assignment:
    allocation_id: str
    agent_id: str
    slot_ids: tuple[int, ...]


def place(pending: list[PendingAllocation], agents: list[AgentCapacity]) -> list[Assignment]:
    """Assign pending allocations in (priority, submission) order, best fit, never a partial gang.

    Zero-slot allocations go to the enabled agent of their pool with the most free slots.
    """
    free = {a.agent_id: list(a.free_slot_ids) for a in agents if a.enabled}
    by_id = {a.agent_id: a for a in agents if a.enabled}
    out: list[Assignment] = []
    for req in sorted(pending, key=lambda p: (p.priority, p.submitted_at, p.allocation_id)):
        fits = [
            aid
            for aid, ids in free.items()
            if by_id[aid].resource_pool == req.resource_pool and len(ids) >= req.slots
        ]
        if not fits:
            continue
        if req.slots == 0:
            chosen = max(fits, key=lambda aid: (len(free[aid]), aid))
        else:
            chosen = min(fits, key=lambda aid: (len(free[aid]), aid))
        taken = tuple(free[chosen][: req.slots])
        free[chosen] = free[chosen][req.slots :]
        out.append(Assignment(req.allocation_id, chosen, taken))
    return out
