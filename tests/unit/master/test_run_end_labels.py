"""How a trial's run is labelled when it ends (the exit reason `t describe` and the trial page show): a run that ended
its trial's work, after its length or when the searcher's stop or the search's end asked it to, is COMPLETED; only a
run that is to resume later is PREEMPTED. Driven through the master's state machines on a real SQLite database."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import sqlalchemy as sa

from stalwart.api.states import ExitReason
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments, finishing, searching
from stalwart.master.queries import runs
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings

CONFIG = """
name: labels
entrypoint: python3 train.py
searcher: {name: single, metric: acc, smaller_is_better: false, max_length: {batches: 10}}
checkpoint_storage: {type: shared_fs, host_path: %s}
"""


@pytest.fixture
def m(tmp_path: pathlib.Path):
    master = Master(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path))
    agents.register(master, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    yield master
    master.db.dispose()


def _started(m: Master, tmp_path: pathlib.Path) -> tuple[int, dict[str, Any]]:
    """A new single-trial experiment and its first run, started on the agent."""
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print('x')\n")
    exp_id, _ = experiments.create_experiment(m, CONFIG % (tmp_path / "ckpts"), pack_context(ctx).data,
                                              activate=True, owner="me")
    assert exp_id is not None
    scheduling.tick(m)
    [alloc] = [a for a in _rows(m, t.allocations) if a["state"] != "TERMINATED"]
    return exp_id, alloc


def _rows(m: Master, table: sa.Table) -> list[dict[str, Any]]:
    with m.db.begin() as conn:
        return [dict(r) for r in conn.execute(sa.select(table)).mappings()]


def _acknowledged_exit(m: Master, alloc: dict[str, Any]) -> None:
    """The trial saw its preemption signal, checkpointed and exited 0 (what the harness does when asked to stop)."""
    with m.db.begin() as conn:
        runs.ack_preemption(conn, alloc["id"])
        lifecycle.allocation_exited(m, conn, alloc["id"], 0, ExitReason.EXITED)


def _labels(m: Master) -> list[str]:
    return [a["exit_reason"] for a in sorted(_rows(m, t.allocations), key=lambda a: a["run_id"])]


def test_a_run_stopped_by_the_searcher_is_completed_not_preempted(m: Master, tmp_path: pathlib.Path) -> None:
    exp_id, alloc = _started(m, tmp_path)
    trial = _rows(m, t.trials)[0]
    with m.db.begin() as conn:
        assert searching._stop_trial(m, conn, exp_id, trial["request_id"]) is False  # asked to stop, not yet ended
    _acknowledged_exit(m, alloc)
    assert _rows(m, t.trials)[0]["state"] == "COMPLETED"
    assert _labels(m) == ["COMPLETED"]


def test_a_run_ended_by_the_end_of_the_search_is_completed(m: Master, tmp_path: pathlib.Path) -> None:
    exp_id, alloc = _started(m, tmp_path)
    with m.db.begin() as conn:  # the searcher's Shutdown: its budget is spent, the last run is asked to stop
        finishing.shutdown(m, conn, exp_id, failure=False, reason="")
    _acknowledged_exit(m, alloc)
    scheduling.tick(m)
    assert _rows(m, t.experiments)[0]["state"] == "COMPLETED"
    assert _labels(m) == ["COMPLETED"]


def test_a_run_that_ends_after_its_length_is_completed(m: Master, tmp_path: pathlib.Path) -> None:
    _, alloc = _started(m, tmp_path)
    with m.db.begin() as conn:
        lifecycle.allocation_exited(m, conn, alloc["id"], 0, ExitReason.EXITED)
    assert _labels(m) == ["COMPLETED"]


def test_a_run_preempted_to_resume_later_stays_preempted(m: Master, tmp_path: pathlib.Path) -> None:
    exp_id, alloc = _started(m, tmp_path)
    experiments.pause(m, exp_id)
    _acknowledged_exit(m, alloc)
    assert _rows(m, t.trials)[0]["state"] == "PAUSED"
    experiments.activate(m, exp_id)
    scheduling.tick(m)
    [second] = [a for a in _rows(m, t.allocations) if a["state"] != "TERMINATED"]
    with m.db.begin() as conn:
        lifecycle.allocation_exited(m, conn, second["id"], 0, ExitReason.EXITED)
    assert _labels(m) == ["PREEMPTED", "COMPLETED"]


def test_a_failed_run_stays_exited(m: Master, tmp_path: pathlib.Path) -> None:
    _, alloc = _started(m, tmp_path)
    with m.db.begin() as conn:
        lifecycle.allocation_exited(m, conn, alloc["id"], 1, ExitReason.EXITED)
    assert _labels(m)[0] == "EXITED"
