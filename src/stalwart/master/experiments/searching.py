"""Feeds trial events to an experiment's searcher and carries out the actions it returns."""

from __future__ import annotations

import threading
from collections import deque

import sqlalchemy as sa

from stalwart.api.errors import ConfigError
from stalwart.api.states import AllocationState, ExitReason, ExperimentState as S
from stalwart.db import tables as t
from stalwart.master.experiments import checkpoint_gc
from stalwart.master.experiments import custom_search
from stalwart.searcher import Create, SearchMethod, Shutdown, Stop, TrialExit, make_search_method
from stalwart.searcher.base import Pause, Resume
from stalwart.master.service import Master, now


def build(config: dict, archive: bytes, label: str = "") -> SearchMethod:
    """A fresh searcher; a custom one starts its worker process from the context `archive`."""
    if config["searcher"]["name"] == "custom":
        return custom_search.start(config, archive, label)
    return make_search_method(config)


def discard(search: SearchMethod, m: Master | None = None) -> None:
    """Let go of a searcher that will not be used (a custom one's process ends)."""
    if isinstance(search, custom_search.SearcherProcess):
        if m is not None:
            with _custom_lock:
                for exp_id in [k for k, v in m.custom_searchers.items() if v is search]:
                    del m.custom_searchers[exp_id]
        search.close()


def adopt(m: Master, exp_id: int, search: SearchMethod) -> None:
    """Keep a custom searcher's process for the experiment's life."""
    if isinstance(search, custom_search.SearcherProcess):
        search.label = f"experiment {exp_id}"
        with _custom_lock:
            m.custom_searchers[exp_id] = search


def forget(m: Master, exp_id: int) -> None:
    """The experiment has ended: stop its custom searcher's process, if it has one."""
    with _custom_lock:
        search = m.custom_searchers.pop(exp_id, None)
    if search is not None:
        search.close()


_custom_lock = threading.Lock()


class _Inert(SearchMethod):
    """Stands in for a custom searcher that cannot run: nothing new happens, or the search fails."""

    def __init__(self, state: dict | None, progress: float, failure: str = "") -> None:
        self.state, self.last_progress, self.failure = state, progress, failure

    def _events(self) -> list:
        return [Shutdown(failure=True, reason=self.failure)] if self.failure else []

    def initial_operations(self) -> list:
        return self._events()

    def on_validation_completed(self, request_id, metrics, steps_completed) -> list:
        return self._events()

    def on_trial_exited(self, request_id, how) -> list:
        return self._events()

    def progress(self, trial_progress) -> float:
        return self.last_progress

    def snapshot(self) -> dict | None:
        return self.state

    def restore(self, snapshot: dict) -> None:
        self.state = snapshot


def _load_custom(m: Master, conn, exp) -> SearchMethod:
    with _custom_lock:
        search = m.custom_searchers.get(exp["id"])
    if search is not None:
        return search
    if S(exp["state"]).terminal:
        return _Inert(exp["searcher_state"], exp["progress"])
    archive = conn.execute(
        sa.select(t.contexts.c.archive).where(t.contexts.c.experiment_id == exp["id"])).scalar_one()
    search = None
    try:
        search = custom_search.start(exp["config"], archive, f"experiment {exp['id']}")
        if exp["searcher_state"] is not None:
            search.restore(exp["searcher_state"])
    except ConfigError as exc:
        if isinstance(search, custom_search.SearcherProcess):
            search.close()
        return _Inert(exp["searcher_state"], exp["progress"], failure=f"custom searcher could not be restarted: {exc}")
    adopt(m, exp["id"], search)
    return search


def load(m: Master, conn, exp_id: int) -> tuple[dict, SearchMethod]:
    exp = Master.get_row(conn, t.experiments, exp_id, "experiment")
    if exp["config"]["searcher"]["name"] == "custom":
        return exp, _load_custom(m, conn, exp)
    search = make_search_method(exp["config"])
    if exp["searcher_state"] is not None:
        search.restore(exp["searcher_state"])
    return exp, search


def apply(m: Master, conn, exp_id: int, search: SearchMethod, actions: list) -> None:
    """Carry out actions in order; exits they cause at once (a stop before a start) feed back into the queue."""
    from stalwart.master.experiments import experiments

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
            experiments.shutdown(m, conn, exp_id, action.failure, action.reason, cancel=action.cancel)
    _save(conn, exp_id, search)


def _trial_of(conn, exp_id: int, request_id: str):
    return conn.execute(
        sa.select(t.trials).where(t.trials.c.experiment_id == exp_id, t.trials.c.request_id == request_id)
    ).mappings().first()


def _preempt_live(m: Master, conn, trial_id: int) -> bool:
    """Ask the trial's started allocation to checkpoint and exit (a pending one is just dropped).

    True if a started run is still to end.
    """
    from stalwart.master.experiments.experiments import request_preemption

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
            request_preemption(m, conn, alloc_id)
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
    exp, search = load(m, conn, trial["experiment_id"])
    apply(m, conn, exp["id"], search, search.on_validation_completed(trial["request_id"], metrics, steps_completed))


def on_trial_exit(m: Master, conn, trial: dict, how: TrialExit) -> None:
    exp, search = load(m, conn, trial["experiment_id"])
    apply(m, conn, exp["id"], search, search.on_trial_exited(trial["request_id"], how))


def refresh_progress(m: Master, conn, exp_id: int) -> None:
    _, search = load(m, conn, exp_id)
    _save(conn, exp_id, search)
