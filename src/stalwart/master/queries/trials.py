"""Reads and writes of the trials table."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row, one_or_404


def get(conn: Conn, trial_id: int) -> Row:
    """One trial; 404 when there is none."""
    return one_or_404(conn, t.trials, trial_id, "trial")


def of_experiment(conn: Conn, exp_id: int) -> list[Row]:
    """An experiment's trials in id order."""
    return list(conn.execute(
        sa.select(t.trials).where(t.trials.c.experiment_id == exp_id).order_by(t.trials.c.id)
    ).mappings().all())


def counts_by_experiment(conn: Conn) -> dict[int, int]:
    """How many trials each experiment has."""
    return {int(e): int(n) for e, n in conn.execute(
        sa.select(t.trials.c.experiment_id, sa.func.count()).group_by(t.trials.c.experiment_id)).all()}
