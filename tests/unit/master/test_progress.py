"""An experiment's progress (docs/searchers.md, "Progress"): the share of the searcher's budget actually trained,
kept when the experiment is killed, 1 when it completes; driven against a real SQLite database."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
import yaml

from stalwart.api.states import ExitReason
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments, intake, progress
from stalwart.master.queries import trials as trial_rows
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.searcher.simulate import budget, preview


def _config(tmp_path, searcher: dict, **extra) -> str:
    return yaml.safe_dump({
        "name": "progress", "entrypoint": "python3 train.py",
        "hyperparameters": {"lr": 0.1 if searcher["name"] == "single" else {"type": "double", "minval": 0.01,
                                                                             "maxval": 0.1}},
        "searcher": {"metric": "acc", "smaller_is_better": False, **searcher}, "max_restarts": 0,
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "ckpts")}, **extra})


@pytest.fixture
def m(tmp_path):
    master = Master(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path))
    agents.register(master, {"agent_id": "a0", "slots": 4}, caller=credentials.IN_PROCESS)
    yield master
    master.db.dispose()


@pytest.fixture
def archive(tmp_path):
    d = tmp_path / "ctx"
    d.mkdir()
    (d / "train.py").write_text("print('x')\n")
    return pack_context(d).data


def _rows(m, table, **where):
    with m.db.begin() as conn:
        q = sa.select(table).order_by(table.c[next(iter(table.primary_key.columns)).name])
        for k, v in where.items():
            q = q.where(table.c[k] == v)
        return [dict(r) for r in conn.execute(q).mappings()]


def _live(m) -> list[dict]:
    scheduling.tick(m)
    return [a for a in _rows(m, t.allocations) if a["state"] != "TERMINATED"]


def _exit(m, alloc, code, reason=ExitReason.EXITED):
    with m.db.begin() as conn:
        lifecycle.allocation_exited(m, conn, alloc["id"], code, reason)


def _progress(m, exp_id) -> float:
    return _rows(m, t.experiments, id=exp_id)[0]["progress"]


def test_a_killed_experiment_keeps_the_share_of_its_budget_it_trained(m, archive, tmp_path):
    """Killed at 20 of 400 batches: 5%, before and after the kill, for the experiment and its trial."""
    exp_id, _ = experiments.create_experiment(
        m, _config(tmp_path, {"name": "single", "max_length": {"batches": 400}}), archive, activate=True, owner="me")
    [alloc] = _live(m)
    intake.set_progress(m, alloc["id"], alloc["trial_id"], 20 / 400)
    assert _progress(m, exp_id) == pytest.approx(0.05)
    experiments.kill(m, exp_id)
    _exit(m, alloc, -9, ExitReason.KILLED)
    scheduling.tick(m)
    exp = _rows(m, t.experiments, id=exp_id)[0]
    assert exp["state"] == "CANCELED" and exp["progress"] == pytest.approx(0.05)
    assert _rows(m, t.trials)[0]["progress"] == pytest.approx(0.05)


def test_random_search_counts_every_trial_against_the_whole_budget_and_completes_at_one(m, archive, tmp_path):
    exp_id, _ = experiments.create_experiment(
        m, _config(tmp_path, {"name": "random", "max_trials": 4, "max_length": {"batches": 100}}), archive,
        activate=True, owner="me")
    live = _live(m)
    assert len(live) == 4
    intake.set_progress(m, live[0]["id"], live[0]["trial_id"], 0.5)
    assert _progress(m, exp_id) == pytest.approx(0.5 / 4)
    _exit(m, live[0], 0)  # trained to its end on its own: a whole trial
    assert _progress(m, exp_id) == pytest.approx(1 / 4)
    for alloc in live[1:]:
        _exit(m, alloc, 0)
    assert _rows(m, t.experiments, id=exp_id)[0]["state"] == "COMPLETED" and _progress(m, exp_id) == 1.0


def test_a_trial_the_searcher_stops_early_counts_what_it_trained(m, archive, tmp_path):
    """A searcher's stop completes the trial without making it a whole one; the budget is preview-search's."""
    config = _config(tmp_path, {"name": "adaptive_asha", "max_trials": 4, "max_length": {"batches": 160},
                                "max_rungs": 2, "divisor": 4, "max_concurrent_trials": 4},
                     reproducibility={"experiment_seed": 3})
    exp_id, _ = experiments.create_experiment(m, config, archive, activate=True, owner="me")
    with m.db.begin() as conn:
        stored = conn.execute(sa.select(t.experiments.c.config).where(t.experiments.c.id == exp_id)).scalar_one()
    rows = preview(stored).rows
    assert progress.budget(stored) == budget(stored) == sum(n * length for n, length in rows)
    [first, *_] = _live(m)
    intake.set_progress(m, first["id"], first["trial_id"], 0.25)
    with m.db.begin() as conn:
        trial_rows.request_stop(conn, first["trial_id"])  # as the searcher's Stop does
    _exit(m, first, 0)
    trial = _rows(m, t.trials, id=first["trial_id"])[0]
    assert trial["state"] == "COMPLETED" and trial["progress"] == pytest.approx(0.25)
    assert _progress(m, exp_id) == pytest.approx(0.25 * 160 / budget(stored))


def test_a_resumed_trial_keeps_the_units_it_trained(m, archive, tmp_path):
    exp_id, _ = experiments.create_experiment(
        m, _config(tmp_path, {"name": "single", "max_length": {"batches": 400}}), archive, activate=True, owner="me")
    [alloc] = _live(m)
    intake.set_progress(m, alloc["id"], alloc["trial_id"], 0.5)
    with m.db.begin() as conn:
        trial_rows.resume_for_searcher(conn, alloc["trial_id"], 800)
    assert _rows(m, t.trials)[0]["progress"] == pytest.approx(0.25)  # 200 of its new 800 batches


def test_budget_counts_forked_trials_from_where_they_start():
    """PBT: each round's children start from their parents' checkpoints; only their own round counts."""
    config = {"name": "pbt", "entrypoint": "x", "hyperparameters": {"lr": {"type": "double", "minval": 0.1,
                                                                           "maxval": 1.0}},
              "searcher": {"name": "pbt", "metric": "acc", "population_size": 4, "num_rounds": 3,
                           "length_per_round": {"batches": 10},
                           "replace_function": {"truncate_fraction": 0.5},
                           "explore_function": {"resample_probability": 0.5, "perturb_factor": 0.2}}}
    assert budget(config) == 4 * 3 * 10
