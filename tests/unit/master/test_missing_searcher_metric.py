"""One rule for a missing searcher metric (Determined's): `searcher.metric` must be set at create, and a
validation without its value fails only a searcher that needs the value (ending the experiment in ERROR
with the metric named), never the trial, and never a searcher that ignores validations."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
import yaml

from stalwart.api.errors import ConfigError
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments, searching
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings


@pytest.fixture
def m(tmp_path):
    master = Master(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path))
    agents.register(master, {"agent_id": "a0", "slots": 2}, caller=credentials.IN_PROCESS)
    yield master
    master.db.dispose()


def _create(m, tmp_path, searcher: dict, hparams: dict) -> None:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print('x')\n")
    text = yaml.safe_dump({"entrypoint": "python3 train.py", "hyperparameters": hparams, "searcher": searcher,
                           "max_restarts": 0, "reproducibility": {"experiment_seed": 1}})
    experiments.create_experiment(m, text, pack_context(ctx).data, activate=True, owner="me")
    scheduling.tick(m)


def _validate_without_the_metric(m) -> None:
    with m.db.begin() as conn:
        trial = dict(conn.execute(sa.select(t.trials).order_by(t.trials.c.id)).mappings().first())
        searching.on_validation(m, conn, trial, 10, {"acc": 0.5, "batches": 10})


def _rows(m):
    with m.db.begin() as conn:
        exp = conn.execute(sa.select(t.experiments)).mappings().one()
        trials = conn.execute(sa.select(t.trials).order_by(t.trials.c.id)).mappings().all()
    return exp, trials


def test_a_searcher_that_ignores_validations_does_not_fail_for_a_missing_metric_value(m, tmp_path):
    with pytest.raises(ConfigError) as info:  # the key itself is required at create, for every searcher
        _create(m, tmp_path, {"name": "single", "max_length": 100}, {"lr": 0.1})
    assert "searcher.metric: required" in info.value.details
    _create(m, tmp_path, {"name": "single", "metric": "loss", "max_length": 100}, {"lr": 0.1})
    _validate_without_the_metric(m)
    exp, trials = _rows(m)
    assert exp["state"] == "ACTIVE" and not exp["error_message"]
    assert [(tr["state"], tr["error_message"]) for tr in trials] == [("ACTIVE", None)]


def test_a_searcher_that_needs_the_value_ends_the_experiment_in_error_naming_the_metric(m, tmp_path):
    _create(m, tmp_path, {"name": "adaptive_asha", "metric": "loss", "max_trials": 2, "max_concurrent_trials": 2,
                          "max_time": 40, "time_metric": "batches", "mode": "aggressive"},
            {"lr": {"type": "double", "minval": 0.01, "maxval": 0.1}})
    _validate_without_the_metric(m)
    exp, trials = _rows(m)
    assert exp["state"] in ("STOPPING_ERROR", "ERROR")
    assert "searcher metric 'loss' is missing from the validation metrics reported at steps_completed=10" \
        in exp["error_message"]
    assert "(reported: acc, batches)" in exp["error_message"]
    assert all(tr["state"] != "ERROR" and not tr["error_message"] for tr in trials)  # the master failed no trial
