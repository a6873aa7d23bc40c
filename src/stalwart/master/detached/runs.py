"""Detached trials and their runs: a script outside the cluster makes (or finds again) its trial, starts a run of
it, keeps it alive with heartbeats and ends it; the master ends a run whose heartbeats stop.

A run is an allocation row marked `unmanaged`: no agent places or launches it, it holds no slot, and its token (given
to the caller that started it, who may edit the experiment) authenticates the trial's reports exactly as a managed
run's token does. What a run's end means for its trial and experiment is `run_ended` (the unmanaged task kind)."""

from __future__ import annotations

import random
import uuid
from typing import Any

from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.api.models.detached import DetachedRun
from stalwart.api.states import AllocationState as A, ExitReason, ExperimentState as S
from stalwart.config import secrets
from stalwart.master.allocations import lifecycle
from stalwart.master.detached.experiments import require_detached
from stalwart.master.experiments import finishing, trials
from stalwart.master.logs import master_line
from stalwart.master.queries import (
    allocations as allocation_rows,
    detached as detached_rows,
    experiments as experiment_rows,
    runs,
    trials as trial_rows,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, new_id, now

EXTERNAL = "ext:"
"""The prefix of a detached trial's request id that holds its script's external_trial_id."""
MAX_SEED = 2**31 - 1


def create_or_find_trial(m: Master, exp_id: int, hparams: dict[str, Any], external_id: str | None) -> Row:
    """The experiment's trial `external_id` names, else a new one with these hparams (a detached experiment only)."""
    with m.db.begin() as conn:
        require_detached(conn, exp_id)
        if external_id is not None:
            found = trial_rows.by_request_id(conn, exp_id, EXTERNAL + external_id)
            if found is not None:
                return found
        request_id = EXTERNAL + external_id if external_id is not None else f"detached:{uuid.uuid4().hex}"
        trial_id = trial_rows.insert(
            conn, experiment_id=exp_id, request_id=request_id, hparams=hparams, seed=random.randint(0, MAX_SEED),
            state=S.ACTIVE, target_length=None, source_request_id=None, source_checkpoint_uuid=None,
            created_at=now())
        return trial_rows.get(conn, trial_id)


def external_id_of(trial: Row) -> str | None:
    """The external_trial_id a detached trial was made with (None: none, or a managed trial)."""
    request_id = str(trial["request_id"])
    return request_id[len(EXTERNAL):] if request_id.startswith(EXTERNAL) else None


def start_run(m: Master, trial_id: int, resume: bool) -> DetachedRun:
    """A new run of a detached trial, RUNNING now: what its script needs to report as a trial (the run's token, where
    to resume from). A live run it had (a script that died unnoticed) ends first; a
    finished trial is ACTIVE again when `resume` (else 409: it ran before)."""
    with m.db.begin() as conn:
        trial = trial_rows.get(conn, trial_id)
        exp = require_detached(conn, trial["experiment_id"])
        if trial["runs"] and not resume:
            raise InvalidStateError(f"trial {trial_id} has run before: resume it (resume: true) or make a new trial")
        for old in runs.live_of_trial(conn, trial_id):  # its script is gone: this run replaces it
            allocation_rows.terminate(conn, old["id"], exit_code=None, exit_reason=ExitReason.KILLED.value,
                                      ended_at=now())
            master_line(conn, trial_id, f"run {old['run_id']} ended: its script started a new run", "WARNING",
                        old["id"])
        if S(trial["state"]).terminal:
            trial_rows.reopen(conn, trial_id, target_length=None)
        if S(exp["state"]).terminal:
            detached_rows.reopen_experiment(conn, exp["id"])
        run_id = trial["runs"] + 1
        trial_rows.set_runs(conn, trial_id, run_id)
        allocation_id = new_id()
        detached_rows.insert_run(conn, allocation_id, trial_id=trial_id, run_id=run_id, at=now())
        latest = trials.latest_checkpoint(conn, trial_id)
        master_line(conn, trial_id, f"run {run_id} started by its detached script", "INFO", allocation_id)
    return DetachedRun(
        allocation_id=allocation_id, allocation_token=m.allocation_token(allocation_id), trial_id=trial_id,
        experiment_id=int(exp["id"]), trial_run_id=run_id, trial_seed=int(trial["seed"]),
        hparams=dict(trial["hparams"] or {}), config=secrets.redact(exp["config"]),
        steps_completed=int(latest["steps_completed"]) if latest else 0,
        latest_checkpoint=str(latest["uuid"]) if latest else None,
        heartbeat_timeout_s=m.settings.cluster.detached_heartbeat_timeout, cluster_id=m.cluster_id)


def _live_detached_run(conn: Conn, allocation_id: str) -> Row:
    alloc = allocation_rows.get(conn, allocation_id)
    if not alloc["unmanaged"]:
        raise InvalidStateError(f"allocation {allocation_id} is run by the cluster: only a detached script's run "
                                "sends heartbeats and ends itself")
    if alloc["state"] == A.TERMINATED.value:
        raise InvalidStateError(f"run {alloc['run_id']} of trial {alloc['trial_id']} has ended "
                                f"({alloc['exit_reason']}): start a new run to report again")
    return alloc


def beat(m: Master, allocation_id: str) -> None:
    """The run's script is alive."""
    with m.db.begin() as conn:
        _live_detached_run(conn, allocation_id)
        detached_rows.beat(conn, allocation_id, now())


def end_run(m: Master, allocation_id: str, state: str, message: str | None) -> None:
    """The script ends its run: COMPLETED (its trial completes) or ERROR (the trial ends in ERROR)."""
    if state not in ("COMPLETED", "ERROR"):
        raise InvalidRequest(f"state: {state!r} is not how a run ends; give COMPLETED or ERROR")
    with m.db.begin() as conn:
        alloc = _live_detached_run(conn, allocation_id)
        if message:
            master_line(conn, alloc["trial_id"], f"the detached script reports: {message}",
                        "INFO" if state == "COMPLETED" else "ERROR", allocation_id)
        lifecycle.allocation_exited(m, conn, allocation_id, 0 if state == "COMPLETED" else 1, ExitReason.EXITED)


def sweep(m: Master, conn: Any) -> None:
    """Every scheduling pass: a run whose script sent no heartbeat for the master's detached_heartbeat_timeout
    ends (its trial in ERROR); one the user killed, paused or preempted ends at once (nothing can signal its script,
    which finds its reports refused). `conn`: the pass's connection."""
    timeout = m.settings.cluster.detached_heartbeat_timeout
    for alloc in detached_rows.live_runs(conn):
        if alloc["kill_requested"] or alloc["preempt_requested"]:
            allocation_rows.request_kill(conn, alloc["id"])
            lifecycle.allocation_exited(m, conn, alloc["id"], None, ExitReason.KILLED)
        elif now() - float(alloc["heartbeat_at"] or alloc["created_at"]) > timeout:
            master_line(conn, alloc["trial_id"], f"no heartbeat from the detached script for {timeout:g} s (master "
                        "config detached_heartbeat_timeout): the run is ended in ERROR", "ERROR", alloc["id"])
            lifecycle.allocation_exited(m, conn, alloc["id"], None, ExitReason.EXITED)


def run_ended(m: Master, conn: Conn, alloc: Row, exit_code: int | None, reason: ExitReason) -> None:
    """A detached run ended (the unmanaged task kind's on_ended): its trial ends with it (no restart: only its
    script can run it again), then its experiment once no trial is open."""
    trial = trial_rows.get(conn, alloc["trial_id"])
    if not S(trial["state"]).terminal:
        if reason is ExitReason.KILLED:
            state, error = S.CANCELED, None
        elif exit_code == 0:
            state, error = S.COMPLETED, None
        elif exit_code is None:
            state, error = S.ERROR, "the detached script stopped sending heartbeats"
        else:
            state, error = S.ERROR, "the detached script reported a failure"
        trial_rows.set_state(conn, trial["id"], state, ended_at=now(), progress=1.0 if state is S.COMPLETED else None,
                             error_message=error)
    _maybe_end_experiment(m, conn, int(trial["experiment_id"]))


def _maybe_end_experiment(m: Master, conn: Conn, exp_id: int) -> None:
    """A stopping detached experiment finishes as any does; an active one whose trials have all ended ends
    COMPLETED when one of them completed, else in the state of its last trial."""
    exp = experiment_rows.get(conn, exp_id)
    state = S(exp["state"])
    if state.stopping:
        finishing.maybe_finish(m, conn, exp_id)
        return
    if state.terminal or trial_rows.open_ids(conn, exp_id):
        return
    ended = [S(t["state"]) for t in trial_rows.of_experiment(conn, exp_id)]
    final = S.COMPLETED if S.COMPLETED in ended else (ended[-1] if ended else S.COMPLETED)
    finishing.set_state(conn, exp_id, final, error="every trial of the detached experiment failed"
                        if final is S.ERROR else None)
