"""Free slots of one pool, indexed by (free, total) so that a gang fit costs O(distinct agent sizes), not O(agents).

Fitting (Determined's rules): a request goes on one agent if one has enough free slots, chosen by
`best` fit (the fullest agent that fits) or `worst` fit (the emptiest, by free/total); otherwise it
takes whole idle agents of one size, largest size first, when the request is a multiple of that
size. Ties go to the smallest agent id. Slot ids are taken lowest first.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from stalwart.scheduler.model import AgentState, Container


class FreeSlots:
    def __init__(self, agents: Iterable[AgentState]) -> None:
        self.free: dict[str, list[int]] = {}
        self.total: dict[str, int] = {}
        self._buckets: dict[tuple[int, int], list[str]] = {}
        for a in agents:
            self.free[a.agent_id] = sorted(a.free_slot_ids)
            self.total[a.agent_id] = a.total_slots
            self._bucket_add(a.agent_id)

    # -- index upkeep -----------------------------------------------------------------------
    def _key(self, agent_id: str) -> tuple[int, int]:
        return len(self.free[agent_id]), self.total[agent_id]

    def _bucket_add(self, agent_id: str) -> None:
        bisect.insort(self._buckets.setdefault(self._key(agent_id), []), agent_id)

    def _bucket_remove(self, agent_id: str) -> None:
        key = self._key(agent_id)
        ids = self._buckets[key]
        del ids[bisect.bisect_left(ids, agent_id)]
        if not ids:
            del self._buckets[key]

    def free_count(self) -> int:
        return sum(free * len(ids) for (free, _total), ids in self._buckets.items())

    # -- fitting ------------------------------------------------------------------------------
    def _usable(self, excluded: frozenset[str]) -> dict[tuple[int, int], list[str]]:
        """The index without the `excluded` agents (the index itself when there are none)."""
        if not excluded:
            return self._buckets
        kept = {key: [a for a in ids if a not in excluded] for key, ids in self._buckets.items()}
        return {key: ids for key, ids in kept.items() if ids}

    def fit(self, slots: int, policy: str = "best",
            excluded: frozenset[str] = frozenset()) -> tuple[Container, ...] | None:
        """Where `slots` slots would go now (all of them or None), on no agent of `excluded`; changes nothing."""
        buckets = self._usable(excluded)
        keys = [k for k in buckets if k[0] >= slots and k[0] > 0]
        if keys:
            if policy == "worst":
                top = max(k[0] / k[1] for k in keys)
                tied = [k for k in keys if k[0] / k[1] == top]
            else:
                least = min(k[0] for k in keys)
                tied = [k for k in keys if k[0] == least]
            key = min(tied, key=lambda k: buckets[k][0])
            agent_id = buckets[key][0]
            return ((agent_id, tuple(self.free[agent_id][:slots])),)
        return self._whole_agents(slots, buckets)

    def _whole_agents(self, slots: int, buckets: dict[tuple[int, int], list[str]]) -> tuple[Container, ...] | None:
        for size in sorted({total for (free, total) in buckets if free == total and total > 0}, reverse=True):
            idle = buckets[(size, size)]
            need, rest = divmod(slots, size)
            if rest == 0 and len(idle) >= need:
                return tuple((agent_id, tuple(self.free[agent_id])) for agent_id in idle[:need])
        return None

    # -- changes --------------------------------------------------------------------------------
    def take(self, containers: Iterable[Container]) -> None:
        """Mark these slots used (ids not free here are ignored)."""
        for agent_id, ids in containers:
            if agent_id not in self.free:
                continue
            self._bucket_remove(agent_id)
            gone = set(ids)
            self.free[agent_id] = [i for i in self.free[agent_id] if i not in gone]
            self._bucket_add(agent_id)

    def give(self, containers: Iterable[Container]) -> None:
        """Mark these slots free (as if their holder had exited)."""
        for agent_id, ids in containers:
            if agent_id not in self.free:
                continue
            self._bucket_remove(agent_id)
            self.free[agent_id] = sorted(set(self.free[agent_id]) | set(ids))[: self.total[agent_id]]
            self._bucket_add(agent_id)
