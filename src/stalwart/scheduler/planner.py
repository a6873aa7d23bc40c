"""One scheduling pass over the whole cluster: split by pool, set zero-slot tasks apart, report the impossible."""

from __future__ import annotations

from collections import defaultdict

from stalwart.scheduler import policies
from stalwart.scheduler.fitting import FreeSlots
from stalwart.scheduler.model import AgentState, Decision, PoolPolicy, Request, Start


def schedule(requests: list[Request], agents: list[AgentState],
             policies_by_pool: dict[str, PoolPolicy] | None = None,
             default_policy: PoolPolicy = PoolPolicy()) -> Decision:
    """Pending and running allocations + agents ⇒ which pending ones start where, which running ones
    are preempted, and which pending ones no pool could ever hold (with the reason).

    Pure: no clock, no I/O; the same input always gives the same decision."""
    policies_by_pool = policies_by_pool or {}
    out = Decision()
    by_pool: dict[str, list[Request]] = defaultdict(list)
    for r in requests:
        by_pool[r.resource_pool].append(r)
    pool_agents: dict[str, list[AgentState]] = defaultdict(list)
    for a in sorted(agents, key=lambda a: a.agent_id):
        pool_agents[a.resource_pool].append(a)
    for pool in sorted(by_pool):
        _pool_pass(pool, by_pool[pool], pool_agents.get(pool, []), policies_by_pool.get(pool, default_policy), out)
    return out


def _pool_pass(pool: str, requests: list[Request], agents: list[AgentState], policy: PoolPolicy,
               out: Decision) -> None:
    running = [r for r in requests if r.containers]
    pending = []
    sizes: dict[int, int] = defaultdict(int)
    for a in agents:
        sizes[a.total_slots] += 1
    reasons: dict[int, str | None] = {}
    for r in requests:
        if r.containers:
            continue
        if r.slots not in reasons:
            reasons[r.slots] = impossible(r.slots, pool, sizes)
        reason = reasons[r.slots]
        if reason:
            out.unschedulable[r.allocation_id] = reason
        elif r.slots > 0:
            pending.append(r)
    accepting = [a for a in agents if a.accepting]
    _zero_slot(sorted((r for r in requests if not r.containers and r.slots == 0), key=lambda r: r.order),
               accepting, out)
    free = FreeSlots(accepting)
    if policy.type == "fair_share":
        capacity = sum(a.total_slots for a in accepting)
        policies.fair_share(pending, [r for r in running if r.slots > 0], free, policy, out, capacity)
    else:
        policies.priority(pending, [r for r in running if r.slots > 0], free, policy, out)


def _zero_slot(pending: list[Request], agents: list[AgentState], out: Decision) -> None:
    """Zero-slot tasks need no slot, only an agent of their pool: spread them, least busy agents first."""
    if not agents:
        return
    ranked = sorted(agents, key=lambda a: (-len(a.free_slot_ids), a.agent_id))
    for i, r in enumerate(pending):
        allowed = [a for a in ranked if a.agent_id not in r.excluded_agents] if r.excluded_agents else ranked
        if allowed:
            out.starts.append(Start(r.allocation_id, ((allowed[i % len(allowed)].agent_id, ()),)))


def impossible(slots: int, pool: str, sizes: dict[int, int]) -> str | None:
    """Why no set of agents in `pool` could ever hold `slots` slots, else None.

    `sizes` maps an agent size (total slots) to how many agents of the pool have it, disabled ones included."""
    if not sizes:
        return f"resource pool '{pool}' has no agents; start one with `stalwart agent run --resource-pool {pool}`"
    if slots == 0 or max(sizes) >= slots:
        return None
    for size, count in sizes.items():
        if size > 0 and slots % size == 0 and size * count >= slots:
            return None
    total = sum(size * count for size, count in sizes.items())
    return (f"needs {slots} slots but resource pool '{pool}' can never offer that: it has {total} slot(s) "
            f"on {sum(sizes.values())} agent(s) (a task spans several agents only by taking whole agents of one size)")
