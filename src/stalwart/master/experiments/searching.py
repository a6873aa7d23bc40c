"""Feeds trial events to an experiment's searcher and carries out the actions it returns."""

from __future__ import annotations

from collections import deque
from typing import Any

from stalwart.api.states import AllocationState, ExitReason, ExperimentState as S
from stalwart.master.allocations import lifecycle
from stalwart.master.experiments import checkpoint_gc, finishing, progress, searchers, warm_start
from stalwart.master.queries import (
    allocations as allocation_rows,
    experiments as experiment_rows,
    runs,
    trials as trial_rows,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, now
from stalwart.searcher import Create, SearchMethod, Shutdown, Stop, TrialExit
from stalwart.searcher.base import Pause, Resume


def apply(m: Master, conn: Conn, exp_id: int, search: SearchMethod, actions: list[Any]) -> None:
    """Carry out actions in order; exits they cause at once (a stop before a start) feed back into the queue."""
    queue = deque(actions)
    while queue:
        action = queue.popleft()
        exp = experiment_rows.get(conn, exp_id)
        if isinstance(action, Create):
            if S(exp["state"]).terminal or S(exp["state"]).stopping:
                continue
            start_from = action.checkpoint_uuid or warm_start.source_uuid(conn, exp, action.checkpoint_from)
            trial_rows.insert(
                conn,
                experiment_id=exp_id,
                request_id=action.request_id,
                hparams=action.hparams,
                seed=action.seed,
                state=S.ACTIVE if exp["state"] == S.ACTIVE.value else S.PAUSED,
                target_length=action.length,
                source_request_id=action.checkpoint_from,
                source_checkpoint_uuid=start_from,
                created_at=now(),
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


def _trial_of(conn: Conn, exp_id: int, request_id: str) -> Row | None:
    return trial_rows.by_request_id(conn, exp_id, request_id)


def _preempt_live(m: Master, conn: Conn, trial_id: int) -> bool:
    """Ask the trial's started allocation to checkpoint and exit (a pending one is just dropped).

    True if a started run is still to end.
    """
    started = False
    for alloc in runs.live_of_trial(conn, trial_id):
        if alloc["state"] == AllocationState.PENDING.value:
            allocation_rows.drop_pending(conn, alloc["id"], exit_reason=ExitReason.PREEMPTED.value, ended_at=now())
        else:
            lifecycle.request_preemption(m, conn, alloc["id"])
            started = True
    return started


def _stop_trial(m: Master, conn: Conn, exp_id: int, request_id: str) -> bool:
    """Stop gracefully; True if the trial was not running and is completed right away."""
    trial = _trial_of(conn, exp_id, request_id)
    if trial is None or S(trial["state"]).terminal:
        return False
    trial_rows.request_stop(conn, trial["id"])
    if _preempt_live(m, conn, trial["id"]):
        return False
    trial_rows.set_state(conn, trial["id"], S.COMPLETED, ended_at=now(), searcher_paused=False)
    checkpoint_gc.run_for_trial(m, conn, trial["id"])
    return True


def _hold_trial(m: Master, conn: Conn, exp_id: int, request_id: str) -> None:
    trial = _trial_of(conn, exp_id, request_id)
    if trial is None or S(trial["state"]).terminal:
        return
    trial_rows.hold_for_searcher(conn, trial["id"])
    _preempt_live(m, conn, trial["id"])


def _resume_trial(m: Master, conn: Conn, exp_id: int, request_id: str, length: int) -> None:
    trial = _trial_of(conn, exp_id, request_id)
    if trial is None or S(trial["state"]).terminal:
        return
    trial_rows.resume_for_searcher(conn, trial["id"], length)
    m.wake_scheduler()


def _save(conn: Conn, exp_id: int, search: SearchMethod) -> None:
    """Store the searcher's snapshot and the experiment's progress (`progress`: the one definition of it)."""
    experiment_rows.save_search(conn, exp_id, search.snapshot(),
                                progress.of_experiment(conn, experiment_rows.get(conn, exp_id), search))


def on_validation(m: Master, conn: Conn, trial: dict[str, Any], steps_completed: int,
                  metrics: dict[str, Any]) -> None:
    """Every validation goes to the searcher. Whether one without the searcher metric matters is the
    searcher's to say (Determined's rule): single, random and grid ignore validations; a searcher that
    needs the value ends the search in ERROR naming the metric. The master fails no trial for it."""
    exp, search = searchers.load(m, conn, trial["experiment_id"])
    apply(m, conn, exp["id"], search, search.on_validation_completed(trial["request_id"], metrics, steps_completed))


def on_trial_exit(m: Master, conn: Conn, trial: dict[str, Any], how: TrialExit) -> None:
    exp, search = searchers.load(m, conn, trial["experiment_id"])
    apply(m, conn, exp["id"], search, search.on_trial_exited(trial["request_id"], how))


def refresh_progress(m: Master, conn: Conn, exp_id: int) -> None:
    _, search = searchers.load(m, conn, exp_id)
    _save(conn, exp_id, search)
