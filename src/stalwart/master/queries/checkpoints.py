"""Reads and writes of the checkpoints table."""

from __future__ import annotations

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
