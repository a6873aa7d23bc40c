"""Reads and writes of the experiments table and the rows hanging off one experiment (contexts)."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row, one_or_404


def get(conn: Conn, exp_id: int) -> Row:
    """One experiment; 404 when there is none."""
    return one_or_404(conn, t.experiments, exp_id, "experiment")


def page(conn: Conn, *, limit: int, offset: int) -> tuple[list[Row], int]:
    """The newest experiments first, one page of them, and how many there are in all."""
    rows = conn.execute(
        sa.select(t.experiments).order_by(t.experiments.c.id.desc()).limit(limit).offset(offset)
    ).mappings().all()
    total = conn.execute(sa.select(sa.func.count()).select_from(t.experiments)).scalar_one()
    return list(rows), int(total)


def context_archive(conn: Conn, exp_id: int) -> bytes | None:
    """The experiment's context .tgz as stored at create; None when the experiment does not exist."""
    return conn.execute(sa.select(t.contexts.c.archive).where(t.contexts.c.experiment_id == exp_id)).scalar()
