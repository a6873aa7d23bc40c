"""Reads and writes of the allocations table: one run of a trial or a command, from PENDING to TERMINATED."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.api.states import AllocationState as A, ExperimentState as S
from stalwart.db import tables as t
from stalwart.master.queries.jobs import COMMAND, EXPERIMENT
from stalwart.master.queries.rows import Conn, Row, one_or_404

_ALLOC = t.allocations.c


def get(conn: Conn, allocation_id: str) -> Row:
    """One allocation; 404 when there is none."""
    return one_or_404(conn, t.allocations, allocation_id, "allocation")


def find(conn: Conn, allocation_id: str) -> Row | None:
    """One allocation, or None when this master has none by that id."""
    return conn.execute(sa.select(t.allocations).where(t.allocations.c.id == allocation_id)).mappings().first()


def insert_pending(conn: Conn, allocation_id: str, *, trial_id: int | None, command_id: int | None, run_id: int,
                   slots: int, created_at: float) -> None:
    """A new PENDING allocation of a trial run or a command, asking for `slots` slots."""
    conn.execute(t.allocations.insert().values(
        id=allocation_id, trial_id=trial_id, command_id=command_id, run_id=run_id, slots=slots, slot_ids=[],
        state=A.PENDING.value, preempt_requested=False, preempt_acked=False, kill_requested=False,
        created_at=created_at))


def request_preemption(conn: Conn, allocation_id: str, at: float) -> None:
    """Mark the allocation's preemption as asked for at `at` (unless it already was)."""
    conn.execute(t.allocations.update()
                 .where(_ALLOC.id == allocation_id, _ALLOC.preempt_requested.is_(False))
                 .values(preempt_requested=True, preempt_at=at))


def request_kill(conn: Conn, allocation_id: str) -> None:
    """Mark the allocation as to be killed."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(kill_requested=True))


def set_running(conn: Conn, allocation_id: str, pid: int | None, started_at: float) -> None:
    """Every container of the allocation runs: RUNNING, with the chief's pid."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(
        state=A.RUNNING.value, pid=pid, started_at=started_at))


def set_service_port(conn: Conn, allocation_id: str, port: int) -> None:
    """Where the task's server listens, on its agent (the task said so once the server answered)."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(service_port=port))


def set_exit_code(conn: Conn, allocation_id: str, exit_code: int | None) -> None:
    """Record the allocation's (first failing container's) exit code before it ends."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(exit_code=exit_code))


def set_exit_reason(conn: Conn, allocation_id: str, exit_reason: str) -> None:
    """Record how the allocation's end will be read, before it ends."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(exit_reason=exit_reason))


def terminate(conn: Conn, allocation_id: str, *, exit_code: int | None, exit_reason: str, ended_at: float) -> None:
    """The allocation ended: TERMINATED with its exit code and reason."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(
        state=A.TERMINATED.value, exit_code=exit_code, exit_reason=exit_reason, ended_at=ended_at))


def drop_pending(conn: Conn, allocation_id: str, *, exit_reason: str, ended_at: float) -> None:
    """A PENDING allocation nobody wants any more: TERMINATED without having run (its exit code stays unset)."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(
        state=A.TERMINATED.value, exit_reason=exit_reason, ended_at=ended_at))


def latest_of_command(conn: Conn, command_id: int) -> Row | None:
    """The newest allocation of a command (a command has one), or None."""
    return conn.execute(sa.select(t.allocations).where(_ALLOC.command_id == command_id)
                        .order_by(_ALLOC.created_at.desc()).limit(1)).mappings().first()


def running_of_command(conn: Conn, command_id: int) -> Row | None:
    """The command's (a task's) RUNNING allocation, if it has one."""
    return conn.execute(
        sa.select(t.allocations).where(t.allocations.c.command_id == command_id,
                                       t.allocations.c.state == A.RUNNING.value)
        .order_by(t.allocations.c.created_at.desc()).limit(1)).mappings().first()


def live_count_of_command(conn: Conn, command_id: int) -> int:
    """How many of a command's allocations have not ended."""
    return int(conn.execute(sa.select(sa.func.count()).select_from(t.allocations).where(
        _ALLOC.command_id == command_id, _ALLOC.state != A.TERMINATED.value)).scalar() or 0)


def context_archive(conn: Conn, allocation_id: str) -> bytes | None:
    """The context .tgz the allocation's task runs from: its experiment's, else its command's; None if neither."""
    archive: bytes | None = conn.execute(
        sa.select(t.contexts.c.archive)
        .join(t.trials, t.trials.c.experiment_id == t.contexts.c.experiment_id)
        .join(t.allocations, _ALLOC.trial_id == t.trials.c.id)
        .where(_ALLOC.id == allocation_id)
    ).scalar()
    if archive is None:
        archive = conn.execute(
            sa.select(t.commands.c.archive)
            .join(t.allocations, _ALLOC.command_id == t.commands.c.id)
            .where(_ALLOC.id == allocation_id)
        ).scalar()
    return archive


def live_trial_requests(conn: Conn) -> set[tuple[int, str]]:
    """(experiment id, searcher request id) of every trial with an allocation that has not ended."""
    rows = conn.execute(
        sa.select(t.trials.c.experiment_id, t.trials.c.request_id)
        .join(t.allocations, _ALLOC.trial_id == t.trials.c.id)
        .where(_ALLOC.state != A.TERMINATED.value)
    ).all()
    return {(r.experiment_id, r.request_id) for r in rows}


def live_with_experiment(conn: Conn) -> list[Row]:
    """Allocations that have not ended: state, slots, backfilled, command_id, pending_reason and the
    experiment_id of their trial (None for commands)."""
    return list(conn.execute(
        sa.select(_ALLOC.state, _ALLOC.slots, _ALLOC.backfilled, _ALLOC.command_id, t.trials.c.experiment_id,
                  _ALLOC.pending_reason)
        .select_from(t.allocations.outerjoin(t.trials, t.trials.c.id == _ALLOC.trial_id))
        .where(_ALLOC.state != A.TERMINATED.value)
    ).mappings().all())


def preempting_trial_runs(conn: Conn) -> list[Row]:
    """Live trial allocations asked to preempt, not killed and with no exit reason yet, with their experiment's
    `config`, its state as `exp_state` and the trial's `stop_requested`."""
    return list(conn.execute(
        sa.select(t.allocations, t.experiments.c.config, t.experiments.c.state.label("exp_state"),
                  t.trials.c.stop_requested)
        .join(t.trials, t.trials.c.id == _ALLOC.trial_id)
        .join(t.experiments, t.experiments.c.id == t.trials.c.experiment_id)
        .where(
            _ALLOC.state != A.TERMINATED.value,
            _ALLOC.preempt_requested.is_(True),
            _ALLOC.kill_requested.is_(False),
            _ALLOC.exit_reason.is_(None),
        )
    ).mappings().all())


def pending_of_stopped_trials(conn: Conn) -> list[str]:
    """Ids of PENDING allocations whose trial or experiment is no longer ACTIVE."""
    return list(conn.execute(
        sa.select(_ALLOC.id)
        .join(t.trials, t.trials.c.id == _ALLOC.trial_id)
        .join(t.experiments, t.experiments.c.id == t.trials.c.experiment_id)
        .where(
            _ALLOC.state == A.PENDING.value,
            sa.or_(t.trials.c.state != S.ACTIVE.value, t.experiments.c.state != S.ACTIVE.value),
        )
    ).scalars().all())


def trials_to_queue(conn: Conn) -> list[Row]:
    """ACTIVE trials of ACTIVE managed experiments, neither held for the searcher nor asked to stop, with no
    allocation that has not ended: each trial row with its experiment's `config`."""
    live = sa.select(_ALLOC.trial_id).where(_ALLOC.state != A.TERMINATED.value, _ALLOC.trial_id.is_not(None))
    return list(conn.execute(
        sa.select(t.trials, t.experiments.c.config)
        .join(t.experiments, t.experiments.c.id == t.trials.c.experiment_id)
        .where(
            t.trials.c.state == S.ACTIVE.value,
            t.experiments.c.state == S.ACTIVE.value,
            t.trials.c.searcher_paused.is_(False),
            t.trials.c.stop_requested.is_(False),
            t.trials.c.id.notin_(live),
            t.experiments.c.unmanaged.is_(False),  # a detached script starts its own runs
        )
    ).mappings().all())


def live_with_jobs(conn: Conn) -> list[dict[str, Any]]:
    """Allocations that have not ended, each with its job's queue fields (job_id, priority, weight, max_slots,
    resource_pool, queue_position; None when the job is gone): the scheduling pass's input."""
    j = t.jobs
    q = (
        sa.select(t.allocations, j.c.id.label("job_id"), j.c.priority, j.c.weight, j.c.max_slots,
                  j.c.resource_pool, j.c.queue_position)
        .select_from(
            t.allocations.outerjoin(t.trials, t.trials.c.id == _ALLOC.trial_id).outerjoin(j, sa.or_(
                sa.and_(j.c.type == EXPERIMENT, j.c.entity_id == t.trials.c.experiment_id),
                sa.and_(j.c.type == COMMAND, j.c.entity_id == _ALLOC.command_id))))
        .where(_ALLOC.state != A.TERMINATED.value, _ALLOC.unmanaged.is_(False))  # detached runs hold no slot
    )
    return [dict(r) for r in conn.execute(q).mappings()]


def assign(conn: Conn, allocation_id: str, *, agent_id: str, slot_ids: list[int], backfilled: bool,
           rendezvous_port: int | None) -> bool:
    """A PENDING allocation placed: ASSIGNED to its chief agent and slots. False when it was no longer PENDING."""
    n = conn.execute(
        t.allocations.update()
        .where(_ALLOC.id == allocation_id, _ALLOC.state == A.PENDING.value)
        .values(state=A.ASSIGNED.value, agent_id=agent_id, slot_ids=slot_ids, backfilled=backfilled,
                pending_reason=None, rendezvous_port=rendezvous_port)
    ).rowcount
    return bool(n)


def set_pending_reason(conn: Conn, allocation_id: str, reason: str | None) -> None:
    """Why a PENDING allocation could not be placed in the last pass (None: no reason to give)."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(pending_reason=reason))
