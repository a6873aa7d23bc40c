"""The one place a run of any task starts, is killed, preempted, or exits (the owning domain hears of its end).

Agents report a container's start and exit here; domains ask here for kills and preemptions; the end of the
last container ends the allocation, frees its slots and is handed to the task kind (`kinds`) that owns it."""

from __future__ import annotations

from typing import Any

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.allocations import StartedAnswer
from stalwart.api.states import AllocationState as A, ExitReason
from stalwart.master.allocations import container_orders, containers, kinds, root_guard
from stalwart.master.identity import sessions
from stalwart.master.logs import insert_logs
from stalwart.master.queries import allocations as allocation_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, now


def request_preemption(m: Master, conn: Conn, allocation_id: str) -> None:
    allocation_rows.request_preemption(conn, allocation_id, now())
    m.signals.notify(f"preempt:{allocation_id}")


def request_kill(m: Master, conn: Conn, alloc: Row) -> None:
    allocation_rows.request_kill(conn, alloc["id"])
    agents = {alloc["agent_id"]} | {c["agent_id"] for c in containers.of_allocation(conn, alloc["id"])}
    for agent_id in agents - {None}:
        m.signals.notify(f"agent:{agent_id}")


def start_order(m: Master, conn: Conn, alloc: Row, container: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Everything an agent needs to launch one container of a run: identity, token, env and the info file.
    None when the run may not start (its OS user is root where root tasks are not allowed): it has failed, with
    the reason in its log."""
    if container is None:
        container = containers.of_allocation(conn, alloc["id"])[0]
    try:
        order = kinds.get(kinds.kind_of(alloc) or kinds.COMMAND).start_order(m, conn, alloc, container)
    except container_orders.ContainerRefused as refused:  # its pool's container policy: it would fail again
        _refuse(m, conn, alloc, container, str(refused), setup_failed=True)
        return None
    refusal = root_guard.start_refusal(m, conn, order.get("run_as"), container["agent_id"])
    if refusal is None:
        return order
    _refuse(m, conn, alloc, container, refusal)
    return None


def _refuse(m: Master, conn: Conn, alloc: Row, container: dict[str, Any], why: str, *,
            setup_failed: bool = False) -> None:
    """The run may not start: `why` goes to its log and its container ends (exit code 1)."""
    insert_logs(conn, [{"trial_id": alloc["trial_id"], "allocation_id": alloc["id"], "log": why,
                        "level": "ERROR", "source": "master", "stdtype": "stderr"}])
    _container_exited(m, conn, alloc, container["agent_id"], 1, setup_failed=setup_failed)


def container_started(conn: Conn, allocation_id: str, agent_id: str, pid: int | None) -> None:
    """One container runs; the allocation is RUNNING once all of its containers are."""
    containers.set_state(conn, allocation_id, agent_id, A.RUNNING.value, pid=pid)
    conts = containers.of_allocation(conn, allocation_id)
    if all(c["state"] == A.RUNNING.value for c in conts):
        alloc = allocation_rows.get(conn, allocation_id)
        allocation_rows.set_running(conn, allocation_id, conts[0]["pid"], alloc["started_at"] or now())


def _container(conn: Conn, agent_id: str, allocation_id: str) -> dict[str, Any]:
    for c in containers.of_allocation(conn, allocation_id):
        if c["agent_id"] == agent_id:
            return c
    raise InvalidRequest(f"allocation {allocation_id} is not assigned to agent {agent_id}")


def mark_started(m: Master, agent_id: str, allocation_id: str, pid: int | None) -> StartedAnswer:
    with m.db.begin() as conn:
        alloc = allocation_rows.get(conn, allocation_id)
        c = _container(conn, agent_id, allocation_id)
        if alloc["state"] == A.TERMINATED.value or alloc["kill_requested"] or c["state"] == containers.KILLING:
            return StartedAnswer(kill=True)
        container_started(conn, allocation_id, agent_id, pid)
    return StartedAnswer(kill=False)


def mark_exited(m: Master, agent_id: str, allocation_id: str, exit_code: int | None, agent_lost: bool = False,
                setup_failed: bool = False) -> None:
    """A container ended. A failed one takes the rest of its gang down; the allocation ends with the last
    container, with the first failure's exit code (so a gang failure counts as one failure).

    `agent_lost`: the agent killed it itself, having lost the master for too long (fencing); that ends the
    allocation as a lost agent does, without counting a failure. `setup_failed`: it never ran (its container could
    not be set up); the allocation ends as SETUP_FAILED, which uses up no restart."""
    with m.db.begin() as conn:
        alloc = allocation_rows.get(conn, allocation_id)
        _container(conn, agent_id, allocation_id)
        if agent_lost:
            containers.set_state(conn, allocation_id, agent_id, A.TERMINATED.value)
            if alloc["state"] != A.TERMINATED.value:
                containers.kill_others(m, conn, allocation_id, agent_id)
                allocation_exited(m, conn, allocation_id, None, ExitReason.AGENT_LOST)
            return
        _container_exited(m, conn, alloc, agent_id, exit_code, setup_failed=setup_failed)


def _container_exited(m: Master, conn: Conn, alloc: Row, agent_id: str, exit_code: int | None, *,
                      setup_failed: bool = False) -> None:
    """One container of `alloc` ended with `exit_code`: a failure takes the rest of its gang down, the last one
    ends the allocation (as SETUP_FAILED when a container's set-up failed)."""
    allocation_id = alloc["id"]
    containers.set_state(conn, allocation_id, agent_id, A.TERMINATED.value, exit_code=exit_code)
    if alloc["state"] == A.TERMINATED.value:
        return
    if setup_failed:
        allocation_rows.set_exit_reason(conn, allocation_id, ExitReason.SETUP_FAILED.value)
    first_failure = alloc["exit_code"]
    if exit_code != 0 and first_failure is None:
        first_failure = exit_code
        allocation_rows.set_exit_code(conn, allocation_id, exit_code)
    live = [c for c in containers.of_allocation(conn, allocation_id) if c["state"] != A.TERMINATED.value]
    if live:
        if exit_code != 0:
            containers.kill_others(m, conn, allocation_id, agent_id)
        return
    final = first_failure if first_failure is not None else exit_code
    allocation_exited(m, conn, allocation_id, final, ExitReason.EXITED)


def lose_container(m: Master, conn: Conn, allocation_id: str, agent_id: str) -> None:
    """A running container's agent is gone (silent too long, or re-registered without it): the gang ends as
    a lost agent's run, not counted as a failure."""
    containers.set_state(conn, allocation_id, agent_id, A.TERMINATED.value)
    containers.kill_others(m, conn, allocation_id, agent_id)
    allocation_exited(m, conn, allocation_id, None, ExitReason.AGENT_LOST)


def allocation_exited(m: Master, conn: Conn, allocation_id: str, exit_code: int | None, reason: ExitReason) -> None:
    """Record the end of an allocation, free its slots and hand it to the task kind that owns it. Idempotent."""
    alloc = allocation_rows.get(conn, allocation_id)
    if alloc["state"] == A.TERMINATED.value:
        return
    if alloc["service_port"] is not None:
        m.proxy_targets.clear()  # the task proxy forgets where its server was: its port may be another's next
    if reason is ExitReason.EXITED and alloc["kill_requested"]:
        reason = ExitReason.KILLED
    if reason is ExitReason.EXITED and alloc["exit_reason"] == ExitReason.SETUP_FAILED.value:
        reason = ExitReason.SETUP_FAILED  # a container could not be set up: the others were killed for it
    if reason is ExitReason.EXITED and alloc["preempt_acked"] and exit_code == 0:
        reason = ExitReason.PREEMPTED
    if reason is ExitReason.EXITED and alloc["exit_reason"] == ExitReason.PREEMPTED.value:
        reason = ExitReason.PREEMPTED  # killed at its preemption timeout
    allocation_rows.terminate(conn, allocation_id, exit_code=exit_code, exit_reason=reason.value, ended_at=now())
    containers.release(conn, allocation_id)
    sessions.end_task_sessions(m, conn, allocation_id)  # the owner session its tasks had ends with it
    m.wake_scheduler()
    kind = kinds.kind_of(alloc)
    if kind is not None:
        kinds.get(kind).on_ended(m, conn, alloc, exit_code, reason)
