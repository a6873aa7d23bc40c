"""What every engine-backed manager (Slurm, Kubernetes) does with a run the same way: a started job's one-shot
agents and its gang start, a job gone under a placed run (a lost node's end: re-queued, uncounted), a run that ends
without having run (its reason in its log), a waiting run's reason, and a line in the run's log from the master; and
`EngineManager`, their common part of the interface (kill and preempt as the rows' requests, which the one-shot agents
take like any agent's, status with the engine's node names, the queue from the rows)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stalwart.api.states import AllocationState as A, ExitReason
from stalwart.master.allocations import containers, lifecycle
from stalwart.master.logs import insert_logs
from stalwart.master.queries import agents as agent_rows, allocations as allocation_rows, engine_jobs
from stalwart.master.queries.rows import Conn
from stalwart.master.scheduling import placing
from stalwart.master.service import Master, now
from stalwart.rm import Gang, QueueEntry, ResourceManager, RunStatus

Row = Mapping[Any, Any]  # an allocation row (a query's, or `live_with_jobs`' dict)

@dataclass(frozen=True)
class EngineNode:
    """Where one container of a started job runs: its one-shot agent's id, the node's name and address (for the
    gang's rendezvous), and the slots it holds there."""

    agent_id: str
    hostname: str
    address: str | None
    slots: int


def place(m: Master, conn: Conn, row: Row, nodes: Sequence[EngineNode], pool: str, slot_type: str) -> None:
    """The engine started the run's job: one one-shot agent row per node (enrolled later with the job's join
    credential), and the gang starts on them, rank 0 first."""
    placed = []
    for node in nodes:
        if agent_rows.find(conn, node.agent_id) is None:
            agent_rows.insert(conn, node.agent_id, {
                "hostname": node.hostname, "address": node.address, "resource_pool": pool, "slots": node.slots,
                "slot_type": slot_type, "enabled": True, "connected": False, "registered_at": now(),
                "last_seen": now(), "allocation_id": row["id"]})
        placed.append((node.agent_id, tuple(range(node.slots))))
    engine_jobs.set_started(conn, row["id"], now())
    placing.start_gang(m, conn, row["id"], placed, backfilled=False)


def join_overdue(conn: Conn, row: Row, timeout_s: float) -> bool:
    """Started more than `timeout_s` ago, and some container's agent has still not reported its start."""
    started = row["engine_started_at"]
    if started is None or now() - started <= timeout_s:
        return False
    return any(c["state"] == A.ASSIGNED.value for c in containers.of_allocation(conn, row["id"]))


def lose(m: Master, conn: Conn, row: Row, why: str) -> None:
    """The job is gone under a placed run: it ends as a lost node's run (re-queued from its checkpoint,
    uncounted)."""
    note(conn, row, why, "WARNING")
    for c in containers.of_allocation(conn, row["id"]):
        if c["state"] != A.TERMINATED.value:
            lifecycle.lose_container(m, conn, row["id"], c["agent_id"])
    if allocation_rows.get(conn, row["id"])["state"] != A.TERMINATED.value:
        lifecycle.allocation_exited(m, conn, row["id"], None, ExitReason.AGENT_LOST)


def fail(m: Master, conn: Conn, allocation_id: str, why: str, reason: ExitReason, exit_code: int = 1) -> None:
    """The run ends without having run: `why` goes to its log."""
    row = allocation_rows.get(conn, allocation_id)
    note(conn, row, why, "ERROR")
    if reason is ExitReason.SETUP_FAILED:
        allocation_rows.set_exit_reason(conn, allocation_id, reason.value)
    lifecycle.allocation_exited(m, conn, allocation_id, exit_code, ExitReason.EXITED)


def wait_reason(conn: Conn, gang: Gang, reason: str) -> None:
    if gang.pending_reason != reason:
        allocation_rows.set_pending_reason(conn, gang.allocation_id, reason)


def note(conn: Conn, row: Row, line: str, level: str) -> None:
    insert_logs(conn, [{"trial_id": row["trial_id"], "allocation_id": row["id"], "log": line, "level": level,
                        "source": "master", "stdtype": "stderr"}])


def note_wait(conn: Conn, allocation_id: str, reason: str) -> None:
    """A waiting run's reason, by id (written only where it changed)."""
    if allocation_rows.get(conn, allocation_id)["pending_reason"] != reason:
        allocation_rows.set_pending_reason(conn, allocation_id, reason)


class EngineManager(ResourceManager):
    """A manager whose runs are an engine's jobs run by one-shot agents, opened on the master `m` inside the
    transaction `conn` for `pools`."""

    def __init__(self, m: Master, conn: Conn, pools: Sequence[str]) -> None:
        self.m, self.conn, self._pools = m, conn, tuple(pools)

    def pools(self) -> tuple[str, ...]:
        return self._pools

    def kill(self, allocation_id: str) -> None:
        lifecycle.request_kill(self.m, self.conn, allocation_rows.get(self.conn, allocation_id))

    def preempt(self, allocation_id: str) -> None:
        lifecycle.request_preemption(self.m, self.conn, allocation_id)

    def status(self, allocation_id: str) -> RunStatus:
        """As the rows say, with each container's node named as the engine names it (not its one-shot agent's
        id)."""
        status = placing.run_status(self.conn, allocation_id)
        hosts = {c.node: _hostname(agent_rows.find(self.conn, c.node)) for c in status.containers}
        return dataclasses.replace(status, containers=tuple(
            dataclasses.replace(c, node=hosts[c.node] or c.node) for c in status.containers))

    def queue(self) -> list[QueueEntry]:
        return placing.queue_of(self.conn, self._pools)


def _hostname(row: Row | None) -> str | None:
    return None if row is None else row["hostname"]
