"""The scheduling pass: queue runnable trials, place pending allocations, lose silent agents, time out preemptions."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import sqlalchemy as sa

from stalwart.api.states import AllocationState as A, ExitReason, ExperimentState as S
from stalwart.config import views
from stalwart.db import tables as t
from stalwart.master.allocations import containers, lifecycle
from stalwart.master.scheduling import placing
from stalwart.master.service import Master, new_id, now

log = logging.getLogger(__name__)

_steps: list[Callable[[Master, object], None]] = []


def register_step(step: Callable[[Master, object], None]) -> None:
    """A domain's own step of every pass, run (m, conn) after pending runs nobody wants are dropped and before
    new runs are queued and placed (the experiments domain finishes stopping experiments there)."""
    if step not in _steps:
        _steps.append(step)


def _queue_trials(m: Master, conn) -> None:
    live = sa.select(t.allocations.c.trial_id).where(t.allocations.c.state != A.TERMINATED.value, t.allocations.c.trial_id.is_not(None))
    runnable = conn.execute(
        sa.select(t.trials, t.experiments.c.config)
        .join(t.experiments, t.experiments.c.id == t.trials.c.experiment_id)
        .where(
            t.trials.c.state == S.ACTIVE.value,
            t.experiments.c.state == S.ACTIVE.value,
            t.trials.c.searcher_paused.is_(False),
            t.trials.c.stop_requested.is_(False),
            t.trials.c.id.notin_(live),
        )
    ).mappings().all()
    busy = _trials_with_live_allocations(conn)
    for trial in runnable:
        if trial["source_request_id"] and _source_busy(conn, trial, busy):
            continue  # PBT: start from the source's checkpoint only once its round has ended
        run_id = trial["runs"] + 1
        conn.execute(t.trials.update().where(t.trials.c.id == trial["id"]).values(runs=run_id))
        conn.execute(
            t.allocations.insert().values(
                id=new_id(),
                trial_id=trial["id"],
                run_id=run_id,
                slots=views.slots_per_trial(trial["config"]),
                slot_ids=[],
                state=A.PENDING.value,
                preempt_requested=False,
                preempt_acked=False,
                kill_requested=False,
                created_at=now(),
            )
        )


def _trials_with_live_allocations(conn) -> set[tuple[int, str]]:
    rows = conn.execute(
        sa.select(t.trials.c.experiment_id, t.trials.c.request_id)
        .join(t.allocations, t.allocations.c.trial_id == t.trials.c.id)
        .where(t.allocations.c.state != A.TERMINATED.value)
    ).all()
    return {(r.experiment_id, r.request_id) for r in rows}


def _source_busy(conn, trial, busy: set[tuple[int, str]]) -> bool:
    return (trial["experiment_id"], trial["source_request_id"]) in busy


def _place(m: Master, conn) -> None:
    placing.place(m, conn)


def _lose_silent_agents(m: Master, conn) -> None:
    timeout = m.settings.agent_timeout_s
    cutoff = now() - timeout
    if m.started_at > cutoff:
        return  # after a master restart, give every agent a full timeout to come back
    lost = conn.execute(
        sa.select(t.agents.c.id).where(t.agents.c.connected.is_(True), t.agents.c.last_seen < cutoff)
    ).scalars().all()
    for agent_id in lost:
        log.warning("agent %s has not been heard from for %.0f s; declaring it lost", agent_id, timeout)
        conn.execute(t.agents.update().where(t.agents.c.id == agent_id).values(connected=False))
        for c in containers.on_agent(conn, agent_id):
            lifecycle.lose_container(m, conn, c["allocation_id"], agent_id)


def _enforce_preemption_timeouts(m: Master, conn) -> None:
    """A run that has not exited `preemption_timeout` seconds after its preemption signal is killed.

    A trial that is being stopped ends as before (killed); one that was only preempted (scheduler,
    pause, disabled agent) goes back to the queue and resumes from its latest checkpoint, uncounted."""
    rows = conn.execute(
        sa.select(t.allocations, t.experiments.c.config, t.experiments.c.state.label("exp_state"),
                  t.trials.c.stop_requested)
        .join(t.trials, t.trials.c.id == t.allocations.c.trial_id)
        .join(t.experiments, t.experiments.c.id == t.trials.c.experiment_id)
        .where(
            t.allocations.c.state != A.TERMINATED.value,
            t.allocations.c.preempt_requested.is_(True),
            t.allocations.c.kill_requested.is_(False),
            t.allocations.c.exit_reason.is_(None),
        )
    ).mappings().all()
    for row in rows:
        timeout = row["config"].get("preemption_timeout")
        timeout = 3600 if timeout is None else timeout
        if row["preempt_at"] is None or now() - row["preempt_at"] <= timeout:
            continue
        log.warning("allocation %s did not exit within preemption_timeout (%s s); killing it", row["id"], timeout)
        if row["stop_requested"] or S(row["exp_state"]).stopping:
            lifecycle.request_kill(m, conn, row)
            continue
        conn.execute(t.allocations.update().where(t.allocations.c.id == row["id"])
                     .values(exit_reason=ExitReason.PREEMPTED.value))  # how its end will be read
        containers.kill_others(m, conn, row["id"], None)


def _cancel_unplaced(m: Master, conn) -> None:
    """Pending allocations of trials that no longer want to run are dropped."""
    rows = conn.execute(
        sa.select(t.allocations.c.id)
        .join(t.trials, t.trials.c.id == t.allocations.c.trial_id)
        .join(t.experiments, t.experiments.c.id == t.trials.c.experiment_id)
        .where(
            t.allocations.c.state == A.PENDING.value,
            sa.or_(t.trials.c.state != S.ACTIVE.value, t.experiments.c.state != S.ACTIVE.value),
        )
    ).scalars().all()
    for alloc_id in rows:
        conn.execute(
            t.allocations.update().where(t.allocations.c.id == alloc_id)
            .values(state=A.TERMINATED.value, exit_reason=ExitReason.KILLED.value, ended_at=now())
        )
    for step in list(_steps):
        step(m, conn)


def tick(m: Master) -> None:
    with m.db.begin() as conn:
        _lose_silent_agents(m, conn)
        _enforce_preemption_timeouts(m, conn)
        _cancel_unplaced(m, conn)
        _queue_trials(m, conn)
        _place(m, conn)


async def run_forever(m: Master) -> None:
    while True:
        try:
            tick(m)
        except Exception:  # keep scheduling; the next pass retries
            log.exception("scheduling pass failed")
        await m.signals.wait("scheduler", m.settings.scheduler_interval_s)
