"""Reads and writes of the trials table."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.api.states import ExperimentState as S
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


# --- the experiments domain's reads and writes (helper X) -----------------------------------------

TERMINAL = (S.COMPLETED.value, S.CANCELED.value, S.ERROR.value)
"""Trial states nothing moves a trial out of."""


def find(conn: Conn, trial_id: int) -> Row | None:
    """One trial, or None when there is none."""
    return conn.execute(sa.select(t.trials).where(t.trials.c.id == trial_id)).mappings().first()


def by_request_id(conn: Conn, exp_id: int, request_id: str) -> Row | None:
    """The trial of an experiment that the searcher knows as `request_id`, or None."""
    return conn.execute(
        sa.select(t.trials).where(t.trials.c.experiment_id == exp_id, t.trials.c.request_id == request_id)
    ).mappings().first()


def id_by_request_id(conn: Conn, exp_id: int, request_id: str) -> int | None:
    """The id of the trial of an experiment that the searcher knows as `request_id`, or None."""
    found = conn.execute(sa.select(t.trials.c.id).where(
        t.trials.c.experiment_id == exp_id, t.trials.c.request_id == request_id)).scalar()
    return None if found is None else int(found)


def insert(conn: Conn, *, experiment_id: int, request_id: str, hparams: dict[str, Any], seed: int, state: S,
           target_length: int | None, source_request_id: str | None, source_checkpoint_uuid: str | None,
           created_at: float) -> int:
    """A new trial the searcher asked for (no run yet, nothing requested of it); returns its id."""
    return int(conn.execute(t.trials.insert().values(
        experiment_id=experiment_id, request_id=request_id, hparams=hparams, seed=seed, state=state.value,
        restarts=0, runs=0, target_length=target_length, stop_requested=False, searcher_paused=False,
        source_request_id=source_request_id, source_checkpoint_uuid=source_checkpoint_uuid, progress=0.0,
        created_at=created_at,
    ).returning(t.trials.c.id)).scalar_one())


def set_state(conn: Conn, trial_id: int, state: S, *, ended_at: float | None = None, progress: float | None = None,
              error_message: str | None = None, searcher_paused: bool | None = None) -> None:
    """Move a trial to `state`; the other columns change only where a value is given."""
    values: dict[str, Any] = {"state": state.value}
    for column, value in (("ended_at", ended_at), ("progress", progress), ("error_message", error_message),
                          ("searcher_paused", searcher_paused)):
        if value is not None:
            values[column] = value
    conn.execute(t.trials.update().where(t.trials.c.id == trial_id).values(**values))


def set_states_of_experiment(conn: Conn, exp_id: int, from_states: list[S], state: S, *,
                             ended_at: float | None = None) -> None:
    """Move every trial of an experiment that is in one of `from_states` to `state` (and set ended_at if given)."""
    values: dict[str, Any] = {"state": state.value}
    if ended_at is not None:
        values["ended_at"] = ended_at
    conn.execute(t.trials.update().where(
        t.trials.c.experiment_id == exp_id, t.trials.c.state.in_([s.value for s in from_states])).values(**values))


def request_stop(conn: Conn, trial_id: int) -> None:
    """Mark the trial as asked to stop: its next run ends it instead of resuming it."""
    conn.execute(t.trials.update().where(t.trials.c.id == trial_id).values(stop_requested=True))


def reopen(conn: Conn, trial_id: int, *, target_length: int | None) -> None:
    """A finished trial is ACTIVE again (its experiment continued): a new length to train to, restarts counted
    afresh, nothing asked of it, not ended."""
    conn.execute(t.trials.update().where(t.trials.c.id == trial_id).values(
        state=S.ACTIVE.value, target_length=target_length, restarts=0, stop_requested=False, searcher_paused=False,
        early_exit=None, error_message=None, ended_at=None, progress=0.0))


def set_restarts(conn: Conn, trial_id: int, restarts: int) -> None:
    """Record how many times the trial's runs have failed."""
    conn.execute(t.trials.update().where(t.trials.c.id == trial_id).values(restarts=restarts))


def hold_for_searcher(conn: Conn, trial_id: int) -> None:
    """The searcher paused the trial: it gets no new run until the searcher resumes it."""
    conn.execute(t.trials.update().where(t.trials.c.id == trial_id).values(searcher_paused=True))


def resume_for_searcher(conn: Conn, trial_id: int, target_length: int) -> None:
    """The searcher resumed the trial with a new length to train to; its progress, a fraction of that length, still
    counts what it trained (until its next report)."""
    c = t.trials.c
    kept = sa.case((c.target_length > 0, c.progress * c.target_length / max(target_length, 1)), else_=0.0)
    conn.execute(t.trials.update().where(c.id == trial_id).values(
        searcher_paused=False, target_length=target_length, progress=sa.func.min(kept, 1.0)
        if conn.dialect.name == "sqlite" else sa.func.least(kept, 1.0)))


def set_progress(conn: Conn, trial_id: int, progress: float) -> None:
    """The fraction of its target length the trial reports having trained."""
    conn.execute(t.trials.update().where(t.trials.c.id == trial_id).values(progress=progress))


def set_early_exit(conn: Conn, trial_id: int, reason: str) -> None:
    """The early-exit reason the trial reported (an ExitReason value)."""
    conn.execute(t.trials.update().where(t.trials.c.id == trial_id).values(early_exit=reason))


def open_ids(conn: Conn, exp_id: int) -> list[int]:
    """Ids of an experiment's trials that have not ended (COMPLETED, CANCELED or ERROR)."""
    return [int(i) for i in conn.execute(sa.select(t.trials.c.id).where(
        t.trials.c.experiment_id == exp_id, t.trials.c.state.notin_(TERMINAL))).scalars()]


def ids_of_experiment(conn: Conn, exp_id: int) -> list[int]:
    """Ids of every trial of an experiment."""
    return [int(i) for i in conn.execute(
        sa.select(t.trials.c.id).where(t.trials.c.experiment_id == exp_id)).scalars()]


def progress_of_experiment(conn: Conn, exp_id: int) -> list[Row]:
    """What an experiment's progress is made of, per trial: (id, request_id, progress, state, target_length,
    source_request_id, source_checkpoint_uuid, created_at)."""
    c = t.trials.c
    return list(conn.execute(sa.select(c.id, c.request_id, c.progress, c.state, c.target_length, c.source_request_id,
                                       c.source_checkpoint_uuid, c.created_at)
                             .where(c.experiment_id == exp_id)).mappings().all())


def last_failure(conn: Conn, exp_id: int) -> Row | None:
    """(id, error_message, early_exit) of the trial of an experiment that most recently failed or exited early."""
    return conn.execute(
        sa.select(t.trials.c.id, t.trials.c.error_message, t.trials.c.early_exit)
        .where(t.trials.c.experiment_id == exp_id,
               sa.or_(t.trials.c.state == S.ERROR.value, t.trials.c.early_exit.is_not(None)))
        .order_by(t.trials.c.ended_at.desc()).limit(1)
    ).mappings().first()


def hparams_of_experiment(conn: Conn, exp_id: int, only: list[int] | None = None) -> list[tuple[int, Any]]:
    """(id, hparams) of an experiment's trials in id order; with `only`, of those ids among them."""
    q = sa.select(t.trials.c.id, t.trials.c.hparams).where(t.trials.c.experiment_id == exp_id)
    if only is not None:
        q = q.where(t.trials.c.id.in_(only))
    return [(int(tid), hp) for tid, hp in conn.execute(q.order_by(t.trials.c.id)).all()]


def set_runs(conn: Conn, trial_id: int, runs: int) -> None:
    """How many runs (allocations) the trial has had, the one being queued included."""
    conn.execute(t.trials.update().where(t.trials.c.id == trial_id).values(runs=runs))
