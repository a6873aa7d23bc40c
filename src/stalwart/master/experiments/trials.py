"""The trial state machine: what a run's end means (complete, pause, re-queue, restart, error)."""

from __future__ import annotations

import signal
from typing import Any

from stalwart.api.errors import InvalidStateError
from stalwart.api.states import ExitReason, ExperimentState as S
from stalwart.config import views
from stalwart.master import log_policies
from stalwart.master.allocations import lifecycle
from stalwart.master.experiments import checkpoint_gc, finishing, searching
from stalwart.master.logs import master_line
from stalwart.master.queries import (
    allocations as allocation_rows,
    checkpoints as checkpoint_rows,
    experiments as experiment_rows,
    runs,
    trials as trial_rows,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, now
from stalwart.searcher import TrialExit


def describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit code"
    sig = -code if code < 0 else code - 128 if 128 < code < 160 else None
    if sig:
        try:
            return f"exit code {code} (killed by {signal.Signals(sig).name})"
        except ValueError:
            pass
    return f"exit code {code}"


def _finish_trial(m: Master, conn: Conn, trial: dict[str, Any], state: S, how: TrialExit,
                  error: str | None = None) -> None:
    """End the trial in `state`. One that trained to its end on its own is at progress 1; one stopped early (by the
    searcher, by itself, by a kill or a failure) keeps the progress it reported: its share of the experiment's."""
    whole = state is S.COMPLETED and how is TrialExit.COMPLETED and not trial["stop_requested"]
    trial_rows.set_state(conn, trial["id"], state, ended_at=now(), progress=1.0 if whole else None,
                         error_message=error or None)
    checkpoint_gc.run_for_trial(m, conn, trial["id"])
    searching.on_trial_exit(m, conn, trial, how)


def run_ended(m: Master, conn: Conn, alloc: Row, exit_code: int | None, reason: ExitReason) -> None:
    """A run of a trial has ended (`allocations` recorded it and freed its slots): move the trial on, and
    its experiment, if that was stopping and this was its last live run."""
    trial = dict(trial_rows.get(conn, alloc["trial_id"]))
    exp = experiment_rows.get(conn, trial["experiment_id"])
    _trial_run_ended(m, conn, trial, exp, alloc, exit_code, reason)
    finishing.maybe_finish(m, conn, exp["id"])


def _trial_run_ended(m: Master, conn: Conn, trial: dict[str, Any], exp: Row, alloc: Row, exit_code: int | None,
                     reason: ExitReason) -> None:
    tid, aid = trial["id"], alloc["id"]
    exp_state = S(exp["state"])
    if S(trial["state"]).terminal:
        return
    cancelled = alloc["kill_requested"] or exp_state in (S.STOPPING_CANCELED, S.STOPPING_KILLED)
    if reason is ExitReason.AGENT_LOST:
        if not (trial["stop_requested"] or alloc["kill_requested"] or exp_state.stopping):
            master_line(conn, tid, f"agent {alloc['agent_id']} was lost; the trial will resume from its latest "
                        "checkpoint (not counted as a restart)", "WARNING", aid)
            return
        # it was being stopped: nothing will run it again, so it ends here (a searcher's stop completes it)
        master_line(conn, tid, f"agent {alloc['agent_id']} was lost while the trial was being stopped; "
                    "it ends at its latest checkpoint", "WARNING", aid)
        if not cancelled:
            _finish_trial(m, conn, trial, S.COMPLETED, TrialExit.COMPLETED)
            return
    if reason is ExitReason.PREEMPTED and exit_code != 0 and not alloc["kill_requested"]:
        master_line(conn, tid, "trial did not exit within preemption_timeout and was killed "
                    f"({describe_exit(exit_code)}); it resumes from its latest checkpoint (not counted as a restart)",
                    "WARNING", aid)
        return
    if cancelled:
        master_line(conn, tid, f"trial stopped ({describe_exit(exit_code)})", "INFO", aid)
        _finish_trial(m, conn, trial, S.CANCELED, TrialExit.CANCELED)
        return
    if reason is ExitReason.SETUP_FAILED:
        error = (f"trial {tid} could not start: its container could not be set up (the reason is in the log above: "
                 "an image that cannot be pulled or cannot run the harness, or a container setting the pool does "
                 "not allow); not counted as a restart, since another run would fail the same way")
        master_line(conn, tid, error, "ERROR", aid)
        _finish_trial(m, conn, trial, S.ERROR, TrialExit.ERRORED, error)
        return
    if exit_code == 0:
        if trial["early_exit"] == ExitReason.INVALID_HP.value:
            _finish_trial(m, conn, trial, S.COMPLETED, TrialExit.INVALID_HP)
        elif trial["early_exit"] == ExitReason.USER_REQUESTED_STOP.value:
            _finish_trial(m, conn, trial, S.COMPLETED, TrialExit.USER_REQUESTED_STOP)
        elif trial["searcher_paused"] and not trial["stop_requested"]:
            master_line(conn, tid, "trial paused by the searcher at a boundary; it continues from its latest "
                        "checkpoint if the searcher resumes it", "INFO", aid)
        elif alloc["preempt_requested"] and not trial["stop_requested"] and exp_state in (S.ACTIVE, S.PAUSED):
            master_line(conn, tid, "trial exited after preemption; it resumes from its latest checkpoint "
                        "when scheduled again", "INFO", aid)
        else:
            # its end (after its length, or a preemption the searcher's stop or the search's end asked for) is the
            # trial's completion, not a preemption to resume from
            allocation_rows.set_exit_reason(conn, aid, ExitReason.COMPLETED.value)
            _finish_trial(m, conn, trial, S.COMPLETED, TrialExit.COMPLETED)
        return
    _failed(m, conn, trial, exp, alloc, exit_code)


def _failed(m: Master, conn: Conn, trial: dict[str, Any], exp: Row, alloc: Row, exit_code: int | None) -> None:
    """A failed run: restart the trial while max_restarts allows, else end it in ERROR (at once when its logs
    matched a `cancel_retries` log policy, master/log_policies.py).

    `restarts` counts the restarts made, so a trial that keeps failing under `max_restarts: N` runs N + 1
    times and ends with `restarts = N`, which is what Determined shows (its column counts the last failure
    too, N + 1, but every read of a trial answers `LEAST(restarts, max_restarts)`).
    """
    restart = trial["restarts"] + 1
    limit = views.max_restarts(exp["config"])
    what = f"trial {trial['id']} failed: process ended with {describe_exit(exit_code)}"
    cancelled = log_policies.cancel_retries_reason(conn, trial["id"])
    if cancelled is not None:  # Determined: a cancel_retries match ends the trial whatever max_restarts says
        error = f"{what}; {cancelled}"
        master_line(conn, trial["id"], error, "ERROR", alloc["id"])
        _finish_trial(m, conn, trial, S.ERROR, TrialExit.ERRORED, error)
        return
    if restart > limit:
        error = (f"{what}; trial exceeded max restarts: it would be restart {restart}, more than "
                 f"max_restarts ({limit})")
        master_line(conn, trial["id"], error, "ERROR", alloc["id"])
        _finish_trial(m, conn, trial, S.ERROR, TrialExit.ERRORED, error)
        return
    trial_rows.set_restarts(conn, trial["id"], restart)
    master_line(conn, trial["id"], f"{what}; restarting from its latest checkpoint (restart {restart}/{limit})",
                "WARNING", alloc["id"])


def fail_trial(m: Master, conn: Conn, trial: dict[str, Any], error: str) -> None:
    """End a trial in ERROR at once (a mistake no restart can fix); its processes are killed."""
    if S(trial["state"]).terminal:
        return
    for alloc in runs.live_of_trial(conn, trial["id"]):
        lifecycle.request_kill(m, conn, alloc)
    master_line(conn, trial["id"], error, "ERROR")
    _finish_trial(m, conn, trial, S.ERROR, TrialExit.ERRORED, error)
    finishing.maybe_finish(m, conn, trial["experiment_id"])


def kill_trial(m: Master, trial_id: int) -> None:
    with m.db.begin() as conn:
        trial = dict(trial_rows.get(conn, trial_id))
        if S(trial["state"]).terminal:
            raise InvalidStateError(f"trial {trial_id} is already {trial['state']}")
        live = runs.live_of_trial(conn, trial_id)
        for alloc in live:
            lifecycle.request_kill(m, conn, alloc)
        trial_rows.request_stop(conn, trial_id)
        if not live:
            _finish_trial(m, conn, trial, S.CANCELED, TrialExit.CANCELED)
            finishing.maybe_finish(m, conn, trial["experiment_id"])


def latest_checkpoint(conn: Conn, trial_id: int) -> Row | None:
    """The checkpoint a new run of this trial starts from: its own latest, else the one it was created from."""
    own = checkpoint_rows.latest_completed_of_trial(conn, trial_id)
    if own is not None:
        return own
    trial = trial_rows.find(conn, trial_id)
    if trial is None:
        return None
    if trial["source_checkpoint_uuid"]:
        return checkpoint_rows.completed(conn, trial["source_checkpoint_uuid"])
    if trial["source_request_id"]:
        source = trial_rows.id_by_request_id(conn, trial["experiment_id"], trial["source_request_id"])
        return checkpoint_rows.latest_completed_of_trial(conn, source) if source is not None else None
    return None
