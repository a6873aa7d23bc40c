"""Allocations seen from the experiments domain: the runs of a trial or of an experiment, and a trial's answer to
a preemption request. The allocation lifecycle's own reads and writes are in queries/allocations.py."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.api.states import AllocationState
from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_LIVE = t.allocations.c.state != AllocationState.TERMINATED.value


def find(conn: Conn, allocation_id: str) -> Row | None:
    """One allocation, or None when there is none."""
    return conn.execute(sa.select(t.allocations).where(t.allocations.c.id == allocation_id)).mappings().first()


def trial_of(conn: Conn, allocation_id: str) -> int | None:
    """The trial an allocation runs (None for a command's allocation, or no such allocation)."""
    found = conn.execute(sa.select(t.allocations.c.trial_id).where(t.allocations.c.id == allocation_id)).scalar()
    return None if found is None else int(found)


def of_trial(conn: Conn, trial_id: int) -> list[Row]:
    """Every run of a trial, oldest first."""
    return list(conn.execute(
        sa.select(t.allocations).where(t.allocations.c.trial_id == trial_id).order_by(t.allocations.c.created_at)
    ).mappings().all())


def live_of_trial(conn: Conn, trial_id: int) -> list[Row]:
    """The runs of a trial that have not ended (pending, starting or running)."""
    return list(conn.execute(
        sa.select(t.allocations).where(t.allocations.c.trial_id == trial_id, _LIVE)).mappings().all())


def count_live_of_trial(conn: Conn, trial_id: int) -> int:
    """How many runs of a trial have not ended."""
    return int(conn.execute(sa.select(sa.func.count()).select_from(t.allocations).where(
        t.allocations.c.trial_id == trial_id, _LIVE)).scalar_one())


def live_of_experiment(conn: Conn, exp_id: int) -> list[Row]:
    """The runs of any trial of an experiment that have not ended."""
    return list(conn.execute(
        sa.select(t.allocations)
        .join(t.trials, t.trials.c.id == t.allocations.c.trial_id)
        .where(t.trials.c.experiment_id == exp_id, _LIVE)
    ).mappings().all())


def ack_preemption(conn: Conn, allocation_id: str) -> None:
    """The run has seen its preemption request and will checkpoint and exit."""
    conn.execute(t.allocations.update().where(t.allocations.c.id == allocation_id).values(preempt_acked=True))
