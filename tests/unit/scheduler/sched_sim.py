"""A tiny in-memory cluster for driving `scheduler.schedule` pass by pass in tests (no master, no clock)."""

from __future__ import annotations

import dataclasses
import itertools

from stalwart.scheduler import AgentState, PoolPolicy, Request, schedule


class Sim:
    """Requests and agents; `step()` runs one pass and applies it (starts hold slots, preemptions mark)."""

    def __init__(self, agents: dict[str, int], policy: PoolPolicy = PoolPolicy()) -> None:
        self.sizes = dict(agents)
        self.policy = policy
        self.requests: dict[str, Request] = {}
        self.backfilled: set[str] = set()
        self.unschedulable: dict[str, str] = {}
        self._clock = itertools.count(1)
        self._ids = itertools.count(1)

    def submit(self, job: str, slots: int, n: int = 1, **kw) -> list[str]:
        ids = []
        for _ in range(n):
            aid = f"{job}#{next(self._ids)}"
            self.requests[aid] = Request(aid, job, slots, submitted_at=next(self._clock), **kw)
            ids.append(aid)
        return ids

    def agents(self) -> list[AgentState]:
        used: dict[str, set[int]] = {a: set() for a in self.sizes}
        for r in self.requests.values():
            for agent, ids in r.containers:
                used[agent].update(ids)
        return [AgentState(a, "default", n, tuple(i for i in range(n) if i not in used[a]))
                for a, n in self.sizes.items()]

    def step(self) -> tuple[list[str], list[str]]:
        d = schedule(list(self.requests.values()), self.agents(), default_policy=self.policy)
        for s in d.starts:
            started = dataclasses.replace(self.requests[s.allocation_id], containers=s.containers)
            self.requests[s.allocation_id] = started
            if s.backfilled:
                self.backfilled.add(s.allocation_id)
        for aid in d.preemptions:
            self.requests[aid] = dataclasses.replace(self.requests[aid], preempting=True)
        self.unschedulable = d.unschedulable
        return [s.allocation_id for s in d.starts], list(d.preemptions)

    def exit(self, aid: str, requeue: bool = False) -> str | None:
        """The allocation ends; a preempted trial comes back as a new pending allocation of its job."""
        r = self.requests.pop(aid)
        if requeue:
            return self.submit(r.job_id, r.slots, priority=r.priority, preemptible=r.preemptible,
                               queue_position=r.queue_position)[0]
        return None

    def finish_job(self, job: str) -> None:
        for aid in [a for a, r in self.requests.items() if r.job_id == job]:
            del self.requests[aid]

    def running(self, job: str | None = None) -> list[str]:
        return [a for a, r in self.requests.items() if r.containers and (job is None or r.job_id == job)]

    def slots_of(self, job: str) -> int:
        return sum(r.slots for r in self.requests.values() if r.containers and r.job_id == job)

    def preempting(self) -> list[str]:
        return [a for a, r in self.requests.items() if r.preempting]
