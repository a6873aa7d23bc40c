"""The two slot policies of one pool: priority (optional preemption, backfilling) and weighted fair share."""

from __future__ import annotations

import math
from collections import defaultdict

from stalwart.scheduler.fitting import FreeSlots
from stalwart.scheduler.model import Decision, PoolPolicy, Request, Start


# -- priority ---------------------------------------------------------------------------------------
def priority(pending: list[Request], running: list[Request], free: FreeSlots, policy: PoolPolicy,
             out: Decision) -> None:
    """Start in (priority, queue position, submission) order; a blocked request may preempt
    lower-priority work (lowest first, only if that frees enough) and lower ones backfill around it.
    Non-preemptible work is never backfilled past a blocked request: it could hold its slots forever."""
    victims = sorted((r for r in running if r.preemptible),
                     key=lambda r: (not r.preempting, -r.priority, -r.submitted_at, r.allocation_id))
    blocked = False
    for req in sorted(pending, key=lambda r: r.order):
        plan = free.fit(req.slots, policy.fitting_policy, req.excluded_agents)
        if plan is not None:
            if blocked and not req.preemptible:
                continue
            free.take(plan)
            out.starts.append(Start(req.allocation_id, plan, backfilled=blocked))
            continue
        blocked = True
        if policy.preemption:
            _preempt_for(req, victims, free, policy, out)


def _preempt_for(req: Request, victims: list[Request], free: FreeSlots, policy: PoolPolicy, out: Decision) -> None:
    """Free room for `req` by preempting lower-priority work, or change nothing if that cannot be enough.

    Allocations already told to leave count first and are not told again. The slots of the plan are
    reserved for `req` (nothing backfills into them) until it starts on a later pass."""
    lower = [v for v in victims if v.priority > req.priority]
    if free.free_count() + sum(v.slots for v in lower) < req.slots:
        return
    given: list[Request] = []
    plan = None
    for v in lower:
        free.give(v.containers)
        given.append(v)
        plan = free.fit(req.slots, policy.fitting_policy, req.excluded_agents)
        if plan is not None:
            break
    if plan is None:
        for v in given:
            free.take(v.containers)
        return
    used = {(agent, i) for agent, ids in plan for i in ids}
    free.take(plan)
    for v in given:
        free.take(v.containers)  # still held until the victim exits
        if any((agent, i) in used for agent, ids in v.containers for i in ids):
            victims.remove(v)
            if not v.preempting:
                out.preemptions.append(v.allocation_id)


# -- fair share -------------------------------------------------------------------------------------
def water_fill(capacity: float, jobs: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Split `capacity` among jobs in proportion to weight × demand, never above a job's demand;
    what a capped job leaves is shared again among the others. `jobs`: id → (weight, demand)."""
    share = {j: 0.0 for j in jobs}
    active = {j for j, (w, d) in jobs.items() if w > 0 and d > 0}
    remaining = float(capacity)
    while active and remaining > 0:
        total = sum(jobs[j][0] * jobs[j][1] for j in active)
        capped = {j for j in active if remaining * jobs[j][0] * jobs[j][1] / total >= jobs[j][1]}
        if not capped:
            for j in active:
                share[j] = remaining * jobs[j][0] * jobs[j][1] / total
            break
        for j in capped:
            share[j] = jobs[j][1]
            remaining -= jobs[j][1]
        active -= capped
    return share


def integer_shares(capacity: int, jobs: dict[str, tuple[float, float]], order: list[str]) -> dict[str, int]:
    """`water_fill` rounded down, the slots left given one by one by largest remainder (then job order)."""
    exact = water_fill(capacity, jobs)
    out = {j: math.floor(s + 1e-9) for j, s in exact.items()}
    left = capacity - sum(out.values())
    rank = {j: i for i, j in enumerate(order)}
    for j in sorted(exact, key=lambda j: (-(exact[j] - out[j]), rank.get(j, 0))):
        if left <= 0:
            break
        if out[j] < jobs[j][1] and exact[j] - out[j] > 1e-9:
            out[j] += 1
            left -= 1
    return out


def fair_share(pending: list[Request], running: list[Request], free: FreeSlots, policy: PoolPolicy,
               out: Decision, capacity: int) -> None:
    """Max-min fair shares weighted by `weight` × demand (capped by `max_slots`): jobs under their
    share start work; jobs above it are preempted (newest first) while another job waits for its share."""
    first: dict[str, Request] = {}
    held: dict[str, int] = defaultdict(int)
    wanted: dict[str, int] = defaultdict(int)
    for r in [*running, *pending]:
        first.setdefault(r.job_id, r)
        first[r.job_id] = min(first[r.job_id], r, key=lambda x: x.order)
        wanted[r.job_id] += r.slots
        if r.containers:
            held[r.job_id] += r.slots
    order = sorted(first, key=lambda j: first[j].order)
    jobs = {}
    for j in order:
        cap = first[j].max_slots
        jobs[j] = (first[j].weight, float(min(wanted[j], cap) if cap is not None else wanted[j]))
    shares = integer_shares(capacity, jobs, order)
    rank = {j: i for i, j in enumerate(order)}
    waiting = False
    for req in sorted(pending, key=lambda r: (rank[r.job_id], r.order)):
        if held[req.job_id] + req.slots > shares[req.job_id]:
            continue
        plan = free.fit(req.slots, policy.fitting_policy, req.excluded_agents)
        if plan is None:
            waiting = True
            continue
        free.take(plan)
        held[req.job_id] += req.slots
        out.starts.append(Start(req.allocation_id, plan))
    if not waiting:
        return
    for j in order:
        mine = sorted((r for r in running if r.job_id == j and r.preemptible and not r.preempting),
                      key=lambda r: (-r.submitted_at, r.allocation_id))
        over = sum(r.slots for r in running if r.job_id == j and not r.preempting) - shares[j]
        for r in mine:
            if over <= 0:
                break
            out.preemptions.append(r.allocation_id)
            over -= r.slots
