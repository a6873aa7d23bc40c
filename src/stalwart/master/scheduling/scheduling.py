"""The scheduling pass: queue runnable trials, hand each pool's resource manager its gangs (`managers`: it places
them, and loses silent nodes), time out preemptions."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from stalwart.api.states import ExitReason, ExperimentState as S
from stalwart.config import views
from stalwart.master.allocations import containers, lifecycle
from stalwart.master.provisioning import provisioner
from stalwart.master.queries import allocations as allocation_rows, trials as trial_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.scheduling import managers
from stalwart.master.service import Master, new_id, now

log = logging.getLogger(__name__)

_steps: list[Callable[[Master, Conn], None]] = []


def register_step(step: Callable[[Master, Conn], None]) -> None:
    """A domain's own step of every pass, run (m, conn) after pending runs nobody wants are dropped and before
    new runs are queued and placed (the experiments domain finishes stopping experiments there)."""
    if step not in _steps:
        _steps.append(step)


def _queue_trials(m: Master, conn: Conn) -> None:
    runnable = allocation_rows.trials_to_queue(conn)
    busy = allocation_rows.live_trial_requests(conn)
    for trial in runnable:
        if trial["source_request_id"] and _source_busy(trial, busy):
            continue  # PBT: start from the source's checkpoint only once its round has ended
        run_id = trial["runs"] + 1
        trial_rows.set_runs(conn, trial["id"], run_id)
        allocation_rows.insert_pending(conn, new_id(), trial_id=trial["id"], command_id=None, run_id=run_id,
                                       slots=views.slots_per_trial(trial["config"]), created_at=now())


def _source_busy(trial: Row, busy: set[tuple[int, str]]) -> bool:
    return (trial["experiment_id"], trial["source_request_id"]) in busy


def _enforce_preemption_timeouts(m: Master, conn: Conn) -> None:
    """A run that has not exited `preemption_timeout` seconds after its preemption signal is killed.

    A trial that is being stopped ends as before (killed); one that was only preempted (scheduler,
    pause, disabled agent) goes back to the queue and resumes from its latest checkpoint, uncounted."""
    for row in allocation_rows.preempting_trial_runs(conn):
        timeout = row["config"].get("preemption_timeout")
        timeout = 3600 if timeout is None else timeout
        if row["preempt_at"] is None or now() - row["preempt_at"] <= timeout:
            continue
        log.warning("allocation %s did not exit within preemption_timeout (%s s); killing it", row["id"], timeout)
        if row["stop_requested"] or S(row["exp_state"]).stopping:
            lifecycle.request_kill(m, conn, row)
            continue
        allocation_rows.set_exit_reason(conn, row["id"], ExitReason.PREEMPTED.value)  # how its end will be read
        containers.kill_others(m, conn, row["id"], None)


def _cancel_unplaced(m: Master, conn: Conn) -> None:
    """Pending allocations of trials that no longer want to run are dropped."""
    for alloc_id in allocation_rows.pending_of_stopped_trials(conn):
        allocation_rows.drop_pending(conn, alloc_id, exit_reason=ExitReason.KILLED.value, ended_at=now())
    for step in list(_steps):
        step(m, conn)


def tick(m: Master) -> None:
    with m.db.begin() as conn:
        managers.reconcile(m, conn)  # the agent manager: silent agents are lost
        _enforce_preemption_timeouts(m, conn)
        _cancel_unplaced(m, conn)
        _queue_trials(m, conn)
        managers.place(m, conn)  # each pool's resource manager places what can start


async def run_forever(m: Master) -> None:
    while True:
        try:
            tick(m)
        except Exception:  # keep scheduling; the next pass retries
            log.exception("scheduling pass failed")
        try:  # elastic pools: launch and stop cloud instances, off the event loop (cloud calls take a while)
            if provisioner.elastic_pools(m):
                await asyncio.to_thread(provisioner.provision, m)
        except Exception:
            log.exception("provisioning pass failed")
        await m.signals.wait("scheduler", m.settings.scheduler_interval_s)
