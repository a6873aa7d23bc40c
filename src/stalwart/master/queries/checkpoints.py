"""Reads and writes of the checkpoints table."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.api.errors import NotFoundError
from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row


def get(conn: Conn, uuid: str) -> Row:
    """One checkpoint by uuid; 404 when there is none."""
    row = conn.execute(sa.select(t.checkpoints).where(t.checkpoints.c.uuid == uuid)).mappings().first()
    if row is None:
        raise NotFoundError(f"checkpoint {uuid} not found")
    return row


def of_experiment(conn: Conn, exp_id: int) -> list[Row]:
    """Every checkpoint of an experiment's trials, oldest report first."""
    return list(conn.execute(
        sa.select(t.checkpoints)
        .join(t.trials, t.trials.c.id == t.checkpoints.c.trial_id)
        .where(t.trials.c.experiment_id == exp_id)
        .order_by(t.checkpoints.c.report_time)
    ).mappings().all())


def of_trial(conn: Conn, trial_id: int) -> list[Row]:
    """A trial's checkpoints by steps completed."""
    return list(conn.execute(
        sa.select(t.checkpoints).where(t.checkpoints.c.trial_id == trial_id).order_by(t.checkpoints.c.steps_completed)
    ).mappings().all())


def find(conn: Conn, uuid: str) -> Row | None:
    """One checkpoint by uuid, or None."""
    return conn.execute(sa.select(t.checkpoints).where(t.checkpoints.c.uuid == uuid)).mappings().first()


def exists(conn: Conn, uuid: str) -> bool:
    """Whether a checkpoint with this uuid is registered."""
    return conn.execute(sa.select(t.checkpoints.c.uuid).where(t.checkpoints.c.uuid == uuid)).first() is not None


def insert(conn: Conn, row: dict[str, Any]) -> None:
    """Register a checkpoint: `row` holds every column (uuid, trial_id, allocation_id, steps_completed, ...)."""
    conn.execute(t.checkpoints.insert().values(**row))


def latest_completed_of_trial(conn: Conn, trial_id: int) -> Row | None:
    """The trial's own COMPLETED checkpoint with the most steps (the newest among equals), or None."""
    return conn.execute(
        sa.select(t.checkpoints)
        .where(t.checkpoints.c.trial_id == trial_id, t.checkpoints.c.state == "COMPLETED")
        .order_by(t.checkpoints.c.steps_completed.desc(), t.checkpoints.c.report_time.desc())
        .limit(1)
    ).mappings().first()


def completed(conn: Conn, uuid: str) -> Row | None:
    """The checkpoint with this uuid if it is COMPLETED (its files are there), else None."""
    return conn.execute(sa.select(t.checkpoints).where(
        t.checkpoints.c.uuid == uuid, t.checkpoints.c.state == "COMPLETED")).mappings().first()


def completed_of_trials(conn: Conn, trial_ids: list[int]) -> list[Row]:
    """The COMPLETED checkpoints of these trials (what checkpoint GC may keep or delete)."""
    return list(conn.execute(sa.select(t.checkpoints).where(
        t.checkpoints.c.trial_id.in_(trial_ids), t.checkpoints.c.state == "COMPLETED")).mappings().all())


def steps_of_trials(conn: Conn, trial_ids: list[int]) -> list[Row]:
    """(trial_id, uuid, steps_completed, report_time) of every checkpoint of these trials, deleted ones too."""
    c = t.checkpoints.c
    return list(conn.execute(sa.select(c.trial_id, c.uuid, c.steps_completed, c.report_time)
                             .where(c.trial_id.in_(trial_ids))).mappings().all())


def mark_deleted(conn: Conn, uuid: str) -> None:
    """The checkpoint's files were deleted from storage."""
    conn.execute(t.checkpoints.update().where(t.checkpoints.c.uuid == uuid).values(state="DELETED"))
