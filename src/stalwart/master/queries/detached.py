"""Reads and writes of detached (unmanaged) experiments and their runs: found by external id, started without an
agent, kept alive by their script's heartbeats."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.api.states import AllocationState as A, ExperimentState as S
from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_EXP = t.experiments.c
_ALLOC = t.allocations.c


def experiment_by_external_id(conn: Conn, external_id: str) -> Row | None:
    """The experiment a detached script named `external_id`, or None."""
    return conn.execute(sa.select(t.experiments).where(_EXP.external_id == external_id)).mappings().first()


def mark_unmanaged(conn: Conn, exp_id: int, external_id: str | None) -> None:
    """The experiment is reported by a script outside the cluster (found again by `external_id`, when given)."""
    conn.execute(t.experiments.update().where(_EXP.id == exp_id).values(unmanaged=True, external_id=external_id))


def insert_run(conn: Conn, allocation_id: str, *, trial_id: int, run_id: int, at: float) -> None:
    """A run of an unmanaged trial: RUNNING from the start (its script is already up), on no agent and no slot."""
    conn.execute(t.allocations.insert().values(
        id=allocation_id, trial_id=trial_id, command_id=None, run_id=run_id, slots=0, slot_ids=[],
        state=A.RUNNING.value, preempt_requested=False, preempt_acked=False, kill_requested=False,
        created_at=at, started_at=at, unmanaged=True, heartbeat_at=at))


def beat(conn: Conn, allocation_id: str, at: float) -> None:
    """The run's script is alive at `at`."""
    conn.execute(t.allocations.update().where(_ALLOC.id == allocation_id).values(heartbeat_at=at))


def live_runs(conn: Conn) -> list[Row]:
    """Unmanaged runs that have not ended."""
    return list(conn.execute(sa.select(t.allocations).where(
        _ALLOC.unmanaged.is_(True), _ALLOC.state != A.TERMINATED.value)).mappings().all())


def reopen_experiment(conn: Conn, exp_id: int) -> None:
    """A finished detached experiment is ACTIVE again: its script runs once more."""
    conn.execute(t.experiments.update().where(_EXP.id == exp_id).values(
        state=S.ACTIVE.value, ended_at=None, error_message=None))
