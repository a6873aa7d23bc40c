"""The master's experiment and trial state machines, driven directly against a real SQLite database."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from stalwart.api.errors import ConfigError, InvalidStateError
from stalwart.api.states import ExitReason
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments, searching
from stalwart.master.experiments.intake import MetricsWriter, parse_reports, register_checkpoint
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings

CONFIG = """
name: sm
entrypoint: python3 train.py
hyperparameters: {lr: 0.1}
searcher: {name: single, metric: acc, smaller_is_better: false, max_length: {batches: 10}}
max_restarts: 1
checkpoint_storage: {type: shared_fs, host_path: %s, save_trial_latest: 1, save_trial_best: 1}
"""


@pytest.fixture
def m(tmp_path):
    master = Master(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path))
    agents.register(master, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    yield master
    master.db.dispose()


@pytest.fixture
def ctx_archive(tmp_path):
    d = tmp_path / "ctx"
    d.mkdir()
    (d / "train.py").write_text("print('x')\n")
    return pack_context(d).data


def _create(m, archive, tmp_path, activate=True) -> int:
    exp_id, _ = experiments.create_experiment(m, CONFIG % (tmp_path / "ckpts"), archive, activate=activate,
                                              owner="me")
    return exp_id


def _rows(m, table, **where):
    with m.db.begin() as conn:
        q = sa.select(table)
        for k, v in where.items():
            q = q.where(table.c[k] == v)
        return [dict(r) for r in conn.execute(q).mappings()]


def _live_alloc(m):
    scheduling.tick(m)
    live = [a for a in _rows(m, t.allocations) if a["state"] != "TERMINATED"]
    assert len(live) == 1
    return live[0]


def _exit(m, alloc, code, reason=ExitReason.EXITED):
    with m.db.begin() as conn:
        lifecycle.allocation_exited(m, conn, alloc["id"], code, reason)


def test_create_schedules_one_allocation_on_the_agent(m, ctx_archive, tmp_path):
    exp_id = _create(m, ctx_archive, tmp_path)
    alloc = _live_alloc(m)
    assert alloc["state"] == "ASSIGNED" and alloc["agent_id"] == "a0" and alloc["slot_ids"] == [0]
    order = agents.pending_actions(m, "a0")["start"][0]
    assert order["env"]["DET_EXPERIMENT_ID"] == str(exp_id) and order["info"]["trial"]["hparams"] == {"lr": 0.1}
    assert order["info"]["latest_checkpoint"] is None


def test_invalid_config_and_missing_entrypoint_store_nothing(m, ctx_archive, tmp_path):
    with pytest.raises(ConfigError):
        experiments.create_experiment(m, "searcher: {name: single}", ctx_archive, activate=True, owner="me")
    bad = (CONFIG % tmp_path).replace("train.py", "nope.py")
    with pytest.raises(ConfigError, match="entrypoint"):
        experiments.create_experiment(m, bad, ctx_archive, activate=True, owner="me")
    assert _rows(m, t.experiments) == [] and _rows(m, t.contexts) == []


def test_failures_restart_until_max_restarts_then_error(m, ctx_archive, tmp_path):
    exp_id = _create(m, ctx_archive, tmp_path)
    _exit(m, _live_alloc(m), 137)
    assert _rows(m, t.trials)[0]["restarts"] == 1 and _rows(m, t.trials)[0]["state"] == "ACTIVE"
    _exit(m, _live_alloc(m), 1)
    trial = _rows(m, t.trials)[0]
    assert trial["state"] == "ERROR" and "more than max_restarts (1)" in trial["error_message"]
    assert trial["restarts"] == 1  # the restarts made, as Determined shows them (not the failures)
    assert _rows(m, t.experiments, id=exp_id)[0]["state"] == "ERROR"


def test_agent_loss_requeues_without_counting_a_restart(m, ctx_archive, tmp_path):
    _create(m, ctx_archive, tmp_path)
    _exit(m, _live_alloc(m), None, ExitReason.AGENT_LOST)
    assert _rows(m, t.trials)[0]["restarts"] == 0
    assert _live_alloc(m)["run_id"] == 2


def test_agent_loss_of_a_trial_being_stopped_ends_it_instead_of_leaving_it_waiting(m, ctx_archive, tmp_path):
    # the searcher stops a running trial; its agent is lost before the exit is reported: nothing may requeue it,
    # so it must end (completed, as a searcher stop does) and the experiment with it
    exp_id = _create(m, ctx_archive, tmp_path)
    alloc = _live_alloc(m)
    trial = _rows(m, t.trials)[0]
    with m.db.begin() as conn:
        assert searching._stop_trial(m, conn, exp_id, trial["request_id"]) is False  # running: preempted first
    assert _rows(m, t.allocations, id=alloc["id"])[0]["preempt_requested"]
    _exit(m, alloc, None, ExitReason.AGENT_LOST)
    scheduling.tick(m)
    assert _rows(m, t.trials)[0]["state"] == "COMPLETED"
    assert [a["id"] for a in _rows(m, t.allocations)] == [alloc["id"]]
    assert _rows(m, t.experiments, id=exp_id)[0]["state"] == "COMPLETED"


def test_agent_loss_while_killing_cancels(m, ctx_archive, tmp_path):
    exp_id = _create(m, ctx_archive, tmp_path)
    alloc = _live_alloc(m)
    experiments.kill(m, exp_id)
    _exit(m, alloc, None, ExitReason.AGENT_LOST)
    assert _rows(m, t.trials)[0]["state"] == "CANCELED"
    assert _rows(m, t.experiments)[0]["state"] == "CANCELED"


def test_pause_preempts_then_activate_requeues(m, ctx_archive, tmp_path):
    exp_id = _create(m, ctx_archive, tmp_path)
    alloc = _live_alloc(m)
    experiments.pause(m, exp_id)
    assert _rows(m, t.allocations, id=alloc["id"])[0]["preempt_requested"]
    experiments.pause(m, exp_id)  # pausing twice is a no-op
    _exit(m, alloc, 0)
    assert _rows(m, t.trials)[0]["state"] == "PAUSED"
    scheduling.tick(m)
    assert all(a["state"] == "TERMINATED" for a in _rows(m, t.allocations))
    experiments.activate(m, exp_id)
    assert _live_alloc(m)["run_id"] == 2


def test_kill_while_pending_cancels_everything(m, ctx_archive, tmp_path):
    exp_id = _create(m, ctx_archive, tmp_path)
    alloc = _live_alloc(m)
    experiments.kill(m, exp_id)
    assert agents.pending_actions(m, "a0")["kill"] == [alloc["id"]]
    _exit(m, alloc, -9)
    assert _rows(m, t.experiments)[0]["state"] == "CANCELED"
    assert _rows(m, t.trials)[0]["state"] == "CANCELED"
    with pytest.raises(InvalidStateError, match="already CANCELED"):
        experiments.kill(m, exp_id)


def test_only_a_finished_experiment_can_be_archived_and_unarchived(m, ctx_archive, tmp_path):
    exp_id = _create(m, ctx_archive, tmp_path)
    with pytest.raises(InvalidStateError, match=f"experiment {exp_id} is ACTIVE; only a finished experiment"):
        experiments.archive(m, exp_id)
    alloc = _live_alloc(m)
    experiments.kill(m, exp_id)
    _exit(m, alloc, -9)
    experiments.archive(m, exp_id)
    assert _rows(m, t.experiments)[0]["archived"] is True
    experiments.archive(m, exp_id)  # archiving twice is a no-op
    experiments.unarchive(m, exp_id)
    assert _rows(m, t.experiments)[0]["archived"] is False


def test_metrics_upsert_in_batches_feed_progress_and_checkpoint_gc_keeps_best_and_latest(m, ctx_archive, tmp_path):
    _create(m, ctx_archive, tmp_path)
    alloc = _live_alloc(m)
    trial_id = alloc["trial_id"]
    writer = MetricsWriter(m)
    reports = [{"group": "validation", "steps_completed": s, "metrics": {"acc": a}} for s, a in
               [(2, 0.5), (4, 0.9), (6, 0.7), (8, 0.6)]]
    writer._write(parse_reports(trial_id, {"reports": reports}))
    writer._write(parse_reports(trial_id, {"reports": reports[:1]}))  # a resent batch is idempotent
    assert len(_rows(m, t.metrics)) == 4
    uuids = {}
    for s in (2, 4, 6, 8):
        uuid = f"00000000-0000-4000-8000-00000000000{s}"
        (tmp_path / "ckpts" / uuid).mkdir(parents=True)
        register_checkpoint(m, alloc["id"], {"uuid": uuid, "trial_id": trial_id, "resources": {},
                                             "metadata": {"steps_completed": s}})
        uuids[s] = uuid
    _exit(m, alloc, 0)
    kept = {c["steps_completed"] for c in _rows(m, t.checkpoints) if c["state"] == "COMPLETED"}
    assert kept == {4, 8}  # best (acc 0.9) and latest
    assert not (tmp_path / "ckpts" / uuids[2]).exists() and (tmp_path / "ckpts" / uuids[4]).exists()
    assert _rows(m, t.experiments)[0]["state"] == "COMPLETED"
