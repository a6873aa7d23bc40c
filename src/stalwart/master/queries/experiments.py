"""Reads and writes of the experiments table and the rows hanging off one experiment (contexts)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.api.states import ExperimentState as S
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


def insert(conn: Conn, *, name: str, description: str | None, labels: list[str], owner: str, config: dict[str, Any],
           config_text: str, state: S, created_at: float) -> int:
    """A new experiment (not archived, no progress, no searcher state yet); returns its id."""
    return int(conn.execute(t.experiments.insert().values(
        name=name, description=description, labels=labels, owner=owner, config=config, config_text=config_text,
        state=state.value, archived=False, progress=0.0, searcher_state=None, created_at=created_at,
    ).returning(t.experiments.c.id)).scalar_one())


def set_name(conn: Conn, exp_id: int, name: str, config: dict[str, Any]) -> None:
    """Name the experiment (and its stored config, which holds the name too)."""
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(name=name, config=config))


def insert_context(conn: Conn, exp_id: int, archive: bytes) -> None:
    """Store the experiment's context .tgz."""
    conn.execute(t.contexts.insert().values(experiment_id=exp_id, archive=archive))


def set_archived(conn: Conn, exp_id: int, archived: bool) -> None:
    """Hide the experiment from the default lists (or show it again)."""
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(archived=archived))


def set_state(conn: Conn, exp_id: int, state: S, *, ended_at: float | None = None, progress: float | None = None,
              error_message: str | None = None) -> None:
    """Move an experiment to `state`; the other columns change only where a value is given."""
    values: dict[str, Any] = {"state": state.value}
    for column, value in (("ended_at", ended_at), ("progress", progress), ("error_message", error_message)):
        if value is not None:
            values[column] = value
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(**values))


def save_search(conn: Conn, exp_id: int, searcher_state: Any, progress: float) -> None:
    """The searcher's snapshot and the experiment's progress as the searcher computes it."""
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(
        searcher_state=searcher_state, progress=progress))


def stopping_ids(conn: Conn) -> list[int]:
    """Ids of the experiments in a STOPPING_* state."""
    return [int(i) for i in conn.execute(
        sa.select(t.experiments.c.id).where(t.experiments.c.state.like("STOPPING_%"))).scalars().all()]


def live_names(conn: Conn) -> dict[int, dict[str, Any]]:
    """Experiment id -> {id, name, owner} of every experiment not COMPLETED, CANCELED or ERROR (the job queue's)."""
    ended = [s.value for s in (S.COMPLETED, S.CANCELED, S.ERROR)]
    return {r["id"]: dict(r) for r in conn.execute(
        sa.select(t.experiments.c.id, t.experiments.c.name, t.experiments.c.owner)
        .where(t.experiments.c.state.notin_(ended))).mappings()}
