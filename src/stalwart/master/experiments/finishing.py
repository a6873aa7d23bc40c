"""How an experiment ends: a stopping one reaches its final state once no run is live; the searcher's shutdown."""

from __future__ import annotations

from typing import Any

from stalwart.api.states import ExperimentState as S
from stalwart.master.allocations import lifecycle
from stalwart.master.experiments import checkpoint_gc, progress, searchers
from stalwart.master.queries import experiments as experiment_rows, runs, trials as trial_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, now
from stalwart.master.webhooks import events as webhook_events


def experiment(conn: Conn, exp_id: int) -> Row:
    """The experiment's row; 404 when there is none."""
    return experiment_rows.get(conn, exp_id)


def live_allocations(conn: Conn, exp_id: int) -> list[Row]:
    """The runs of the experiment's trials that have not ended."""
    return runs.live_of_experiment(conn, exp_id)


def set_trials(conn: Conn, exp_id: int, from_states: list[S], to: S) -> None:
    """Move the experiment's trials in `from_states` to `to` (ended now, if `to` is terminal)."""
    trial_rows.set_states_of_experiment(conn, exp_id, from_states, to, ended_at=now() if to.terminal else None)


def set_state(conn: Conn, exp_id: int, state: S, error: str | None = None) -> None:
    """Move the experiment to `state`: a terminal one ends it now, at its final progress (`progress`)."""
    final = progress.of_experiment(conn, {**experiment(conn, exp_id), "state": state.value}) if state.terminal else None
    experiment_rows.set_state(conn, exp_id, state, ended_at=now() if state.terminal else None,
                              progress=final, error_message=error or None)
    webhook_events.experiment_state_changed(conn, exp_id, state.value)  # queued in this transaction


def maybe_finish(m: Master, conn: Conn, exp_id: int) -> None:
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


def _last_failure(conn: Conn, exp_id: int) -> str:
    """Why the most recent failed trial failed, to explain a failed search."""
    last = trial_rows.last_failure(conn, exp_id)
    if last is None:
        return ""
    if last["error_message"]:
        return f": {last['error_message']}"
    if last["early_exit"] == "INVALID_HP":
        return f": trial {last['id']} raised InvalidHP (its hyperparameters cannot train)"
    return f": trial {last['id']} exited early ({last['early_exit']})"


def shutdown(m: Master, conn: Conn, exp_id: int, failure: bool, reason: str, cancel: bool = False) -> None:
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


def finish_stopping(m: Master, conn: Any) -> None:
    """Every pass of the scheduler: each stopping experiment with no live run reaches its final state (`conn`: the
    pass's connection; scheduling declares its steps' connection as `object`)."""
    for exp_id in experiment_rows.stopping_ids(conn):
        maybe_finish(m, conn, exp_id)
