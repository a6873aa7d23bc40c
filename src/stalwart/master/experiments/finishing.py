"""How an experiment ends: a stopping one reaches its final state once no run is live; the searcher's shutdown."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.api.states import AllocationState, ExperimentState as S
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.experiments import checkpoint_gc, searchers
from stalwart.master.service import Master, now


def experiment(conn, exp_id: int):
    return Master.get_row(conn, t.experiments, exp_id, "experiment")


def live_allocations(conn, exp_id: int):
    q = (
        sa.select(t.allocations)
        .join(t.trials, t.trials.c.id == t.allocations.c.trial_id)
        .where(t.trials.c.experiment_id == exp_id, t.allocations.c.state != AllocationState.TERMINATED.value)
    )
    return list(conn.execute(q).mappings())


def set_trials(conn, exp_id: int, from_states: list[S], to: S) -> None:
    values = {"state": to.value}
    if to.terminal:
        values["ended_at"] = now()
    conn.execute(
        t.trials.update()
        .where(t.trials.c.experiment_id == exp_id, t.trials.c.state.in_([s.value for s in from_states]))
        .values(**values)
    )


def set_state(conn, exp_id: int, state: S, error: str | None = None) -> None:
    values: dict = {"state": state.value}
    if state.terminal:
        values["ended_at"] = now()
        if state is S.COMPLETED:
            values["progress"] = 1.0
    if error:
        values["error_message"] = error
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(**values))


def maybe_finish(m: Master, conn, exp_id: int) -> None:
    """A STOPPING_* experiment with no live allocation reaches its final state."""
    exp = experiment(conn, exp_id)
    state = S(exp["state"])
    if not state.stopping or live_allocations(conn, exp_id):
        return
    final = {
        S.STOPPING_COMPLETED: S.COMPLETED,
        S.STOPPING_CANCELED: S.CANCELED,
        S.STOPPING_KILLED: S.CANCELED,
        S.STOPPING_ERROR: S.ERROR,
    }[state]
    open_states = [S.ACTIVE, S.PAUSED, S.STOPPING_CANCELED, S.STOPPING_KILLED, S.STOPPING_COMPLETED, S.STOPPING_ERROR]
    set_trials(conn, exp_id, open_states, S.CANCELED)
    set_state(conn, exp_id, final)
    searchers.forget(m, exp_id)
    checkpoint_gc.run_for_experiment(m, conn, exp_id)


def _last_failure(conn, exp_id: int) -> str:
    """Why the most recent failed trial failed, to explain a failed search."""
    last = conn.execute(
        sa.select(t.trials.c.id, t.trials.c.error_message, t.trials.c.early_exit)
        .where(t.trials.c.experiment_id == exp_id,
               sa.or_(t.trials.c.state == S.ERROR.value, t.trials.c.early_exit.is_not(None)))
        .order_by(t.trials.c.ended_at.desc()).limit(1)
    ).first()
    if last is None:
        return ""
    if last.error_message:
        return f": {last.error_message}"
    if last.early_exit == "INVALID_HP":
        return f": trial {last.id} raised InvalidHP (its hyperparameters cannot train)"
    return f": trial {last.id} exited early ({last.early_exit})"


def shutdown(m: Master, conn, exp_id: int, failure: bool, reason: str, cancel: bool = False) -> None:
    """The searcher is done: stop what still runs and finish."""
    exp = experiment(conn, exp_id)
    state = S(exp["state"])
    if state.terminal:
        return
    if state.stopping:  # a user's cancel or kill already decides the outcome
        maybe_finish(m, conn, exp_id)
        return
    stopping = S.STOPPING_ERROR if failure else S.STOPPING_CANCELED if cancel else S.STOPPING_COMPLETED
    if failure:
        reason = f"{reason or 'the search failed'}{_last_failure(conn, exp_id)}"
    set_state(conn, exp_id, stopping, error=reason or None)
    for alloc in live_allocations(conn, exp_id):
        lifecycle.request_preemption(m, conn, alloc["id"])
    maybe_finish(m, conn, exp_id)


def finish_stopping(m: Master, conn) -> None:
    """Every pass of the scheduler: each stopping experiment with no live run reaches its final state."""
    for exp_id in conn.execute(
        sa.select(t.experiments.c.id).where(t.experiments.c.state.like("STOPPING_%"))
    ).scalars().all():
        maybe_finish(m, conn, exp_id)
