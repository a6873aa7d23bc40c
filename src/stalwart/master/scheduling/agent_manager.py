"""The agent resource manager: Stalwart's own agents run the gangs (docs/resource-managers.md).

A pass hands the pure `scheduler.schedule` every live gang and each agent's free slots; a start becomes container
rows (`allocations.containers`) that the agents' action long-poll turns into start orders; what the agents report
comes back through `allocations.lifecycle`. An agent silent for `agent_timeout` is lost here (`reconcile`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from stalwart.api.states import AllocationState as A
from stalwart.master.allocations import containers, lifecycle
from stalwart.master.queries import agents as agent_rows, allocations as allocation_rows, containers as container_rows
from stalwart.master.queries.rows import Conn
from stalwart.master.scheduling import placing
from stalwart.master.service import Master, now
from stalwart.rm import Gang, PoolCapacity, QueueEntry, ResourceManager, RunStatus
from stalwart.scheduler import AgentState, Decision, PoolPolicy, Request, schedule

log = logging.getLogger(__name__)


def policies(m: Master) -> dict[str, PoolPolicy]:
    return {p.name: PoolPolicy(p.scheduler.type, p.scheduler.fitting_policy, p.scheduler.preemption)
            for p in m.settings.cluster.pools}


class AgentManager(ResourceManager):
    """The agent manager of `pools`, opened on the master `m` inside the transaction `conn`."""

    type = "agent"

    def __init__(self, m: Master, conn: Conn, pools: Sequence[str]) -> None:
        self.m, self.conn, self._pools = m, conn, tuple(pools)

    def pools(self) -> tuple[str, ...]:
        return self._pools

    def reconcile(self) -> None:
        """Agents silent for `agent_timeout` are lost, and so are the containers they ran."""
        timeout = self.m.settings.agent_timeout_s
        cutoff = now() - timeout
        if self.m.started_at > cutoff:
            return  # after a master restart, give every agent a full timeout to come back
        for agent_id in agent_rows.silent_since(self.conn, cutoff):
            log.warning("agent %s has not been heard from for %.0f s; declaring it lost", agent_id, timeout)
            agent_rows.update(self.conn, agent_id, {"connected": False})
            for c in containers.on_agent(self.conn, agent_id):
                lifecycle.lose_container(self.m, self.conn, c["allocation_id"], agent_id)

    def submit(self, gangs: Sequence[Gang]) -> None:
        if not any(g.state == A.PENDING.value for g in gangs):
            return
        placed = container_rows.live_placements(self.conn)
        decision = schedule([_request(g, placed) for g in gangs], self._agents(), policies(self.m))
        for start in decision.starts:
            placing.start_gang(self.m, self.conn, start.allocation_id, start.containers, backfilled=start.backfilled)
        for allocation_id in decision.preemptions:
            lifecycle.request_preemption(self.m, self.conn, allocation_id)
        placing.record_reasons(self.conn, gangs, _with_exclusions(gangs, decision))

    def _agents(self) -> list[AgentState]:
        used = containers.used_slots(self.conn)
        return [
            AgentState(a["id"], a["resource_pool"], a["slots"],
                       tuple(i for i in range(a["slots"]) if i not in used.get(a["id"], set())),
                       accepting=bool(a["connected"] and a["enabled"] and not a["draining"]))
            for a in agent_rows.every(self.conn)
        ]

    def kill(self, allocation_id: str) -> None:
        lifecycle.request_kill(self.m, self.conn, allocation_rows.get(self.conn, allocation_id))

    def preempt(self, allocation_id: str) -> None:
        lifecycle.request_preemption(self.m, self.conn, allocation_id)

    def status(self, allocation_id: str) -> RunStatus:
        return placing.run_status(self.conn, allocation_id)

    def capacity(self) -> list[PoolCapacity]:
        used = containers.used_slots(self.conn)
        out = {p: PoolCapacity(p, 0, 0, 0, 0) for p in self._pools}
        for a in agent_rows.every(self.conn):
            had = out.get(a["resource_pool"])
            if had is None:
                continue
            accepting = bool(a["connected"] and a["enabled"] and not a["draining"])
            out[had.pool] = PoolCapacity(had.pool, had.nodes + 1, had.slots_total + a["slots"],
                                         had.slots_used + len(used.get(a["id"], ())),
                                         had.accepting_nodes + int(accepting))
        return list(out.values())

    def queue(self) -> list[QueueEntry]:
        return placing.queue_of(self.conn, self._pools)


def _with_exclusions(gangs: Sequence[Gang], decision: Decision) -> dict[str, str]:
    """The decision's reasons, and for a pending gang left waiting with excluded agents, that it is kept off them."""
    reasons = dict(decision.unschedulable)
    started = {s.allocation_id for s in decision.starts}
    for g in gangs:
        if g.excluded_nodes and g.state == A.PENDING.value and g.allocation_id not in started | reasons.keys():
            reasons[g.allocation_id] = (f"kept off agent(s) {', '.join(sorted(g.excluded_nodes))}, where its trial's "
                                        "logs matched an exclude_node log policy; waiting for another agent")
    return reasons


def _request(g: Gang, placed: dict[str, list[tuple[str, tuple[int, ...]]]]) -> Request:
    return Request(
        allocation_id=g.allocation_id, job_id=g.job_id, slots=g.slots, resource_pool=g.pool, priority=g.priority,
        weight=g.weight, max_slots=g.max_slots, queue_position=g.queue_position, submitted_at=g.submitted_at,
        preemptible=g.preemptible,
        containers=tuple(placed.get(g.allocation_id, ())) if g.state != A.PENDING.value else (),
        preempting=g.preempt_requested, excluded_agents=g.excluded_nodes,
    )
