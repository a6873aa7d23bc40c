"""Feeds trial events to an experiment's searcher and carries out the actions it returns."""

from __future__ import annotations

from collections import deque

import sqlalchemy as sa

from stalwart.api.states import AllocationState, ExitReason, ExperimentState as S
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.experiments import checkpoint_gc, finishing, searchers
from stalwart.master.service import Master, now
from stalwart.searcher import Create, SearchMethod, Shutdown, Stop, TrialExit
from stalwart.searcher.base import Pause, Resume


def apply(m: Master, conn, exp_id: int, search: SearchMethod, actions: list) -> None:
    """Carry out actions in order; exits they cause at once (a stop before a start) feed back into the queue."""
    queue = deque(actions)
    while queue:
        action = queue.popleft()
        exp = Master.get_row(conn, t.experiments, exp_id, "experiment")
        if isinstance(action, Create):
            if S(exp["state"]).terminal or S(exp["state"]).stopping:
                continue
            conn.execute(
                t.trials.insert().values(
                    experiment_id=exp_id,
                    request_id=action.request_id,
                    hparams=action.hparams,
                    seed=action.seed,
                    state=(S.ACTIVE if exp["state"] == S.ACTIVE.value else S.PAUSED).value,
                    restarts=0,
                    runs=0,
                    target_length=action.length,
                    stop_requested=False,
                    searcher_paused=False,
                    source_request_id=action.checkpoint_from,
                    source_checkpoint_uuid=action.checkpoint_uuid,
                    progress=0.0,
                    created_at=now(),
                )
            )
        elif isinstance(action, Stop):
            if _stop_trial(m, conn, exp_id, action.request_id):
                queue.extend(search.on_trial_exited(action.request_id, TrialExit.COMPLETED))
        elif isinstance(action, Pause):
            _hold_trial(m, conn, exp_id, action.request_id)
        elif isinstance(action, Resume):
            _resume_trial(m, conn, exp_id, action.request_id, action.length)
        elif isinstance(action, Shutdown):
            _save(conn, exp_id, search)
            finishing.shutdown(m, conn, exp_id, action.failure, action.reason, cancel=action.cancel)
    _save(conn, exp_id, search)


def _trial_of(conn, exp_id: int, request_id: str):
    return conn.execute(
        sa.select(t.trials).where(t.trials.c.experiment_id == exp_id, t.trials.c.request_id == request_id)
    ).mappings().first()


def _preempt_live(m: Master, conn, trial_id: int) -> bool:
    """Ask the trial's started allocation to checkpoint and exit (a pending one is just dropped).

    True if a started run is still to end.
    """
    live = conn.execute(
        sa.select(t.allocations.c.id, t.allocations.c.state).where(
            t.allocations.c.trial_id == trial_id, t.allocations.c.state != AllocationState.TERMINATED.value
        )
    ).all()
    started = False
    for alloc_id, state in live:
        if state == AllocationState.PENDING.value:
            conn.execute(t.allocations.update().where(t.allocations.c.id == alloc_id).values(
                state=AllocationState.TERMINATED.value, exit_reason=ExitReason.PREEMPTED.value, ended_at=now()))
        else:
            lifecycle.request_preemption(m, conn, alloc_id)
            started = True
    return started


def _stop_trial(m: Master, conn, exp_id: int, request_id: str) -> bool:
    """Stop gracefully; True if the trial was not running and is completed right away."""
    trial = _trial_of(conn, exp_id, request_id)
    if trial is None or S(trial["state"]).terminal:
        return False
    conn.execute(t.trials.update().where(t.trials.c.id == trial["id"]).values(stop_requested=True))
    if _preempt_live(m, conn, trial["id"]):
        return False
    conn.execute(t.trials.update().where(t.trials.c.id == trial["id"])
                 .values(state=S.COMPLETED.value, ended_at=now(), searcher_paused=False, progress=1.0))
    checkpoint_gc.run_for_trial(m, conn, trial["id"])
    return True


def _hold_trial(m: Master, conn, exp_id: int, request_id: str) -> None:
    trial = _trial_of(conn, exp_id, request_id)
    if trial is None or S(trial["state"]).terminal:
        return
    conn.execute(t.trials.update().where(t.trials.c.id == trial["id"]).values(searcher_paused=True))
    _preempt_live(m, conn, trial["id"])


def _resume_trial(m: Master, conn, exp_id: int, request_id: str, length: int) -> None:
    trial = _trial_of(conn, exp_id, request_id)
    if trial is None or S(trial["state"]).terminal:
        return
    conn.execute(t.trials.update().where(t.trials.c.id == trial["id"])
                 .values(searcher_paused=False, target_length=length, progress=0.0))
    m.wake_scheduler()


def _save(conn, exp_id: int, search: SearchMethod) -> None:
    rows = conn.execute(
        sa.select(t.trials.c.request_id, t.trials.c.progress, t.trials.c.state).where(t.trials.c.experiment_id == exp_id)
    ).all()
    per_trial = {r.request_id: (1.0 if r.state == S.COMPLETED.value else r.progress) for r in rows}
    conn.execute(
        t.experiments.update()
        .where(t.experiments.c.id == exp_id)
        .values(searcher_state=search.snapshot(), progress=search.progress(per_trial))
    )


def on_validation(m: Master, conn, trial: dict, steps_completed: int, metrics: dict) -> None:
    """Every validation goes to the searcher. Whether one without the searcher metric matters is the
    searcher's to say (Determined's rule): single, random and grid ignore validations; a searcher that
    needs the value ends the search in ERROR naming the metric. The master fails no trial for it."""
    exp, search = searchers.load(m, conn, trial["experiment_id"])
    apply(m, conn, exp["id"], search, search.on_validation_completed(trial["request_id"], metrics, steps_completed))


def on_trial_exit(m: Master, conn, trial: dict, how: TrialExit) -> None:
    exp, search = searchers.load(m, conn, trial["experiment_id"])
    apply(m, conn, exp["id"], search, search.on_trial_exited(trial["request_id"], how))


def refresh_progress(m: Master, conn, exp_id: int) -> None:
    _, search = searchers.load(m, conn, exp_id)
    _save(conn, exp_id, search)
