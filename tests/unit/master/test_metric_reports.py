"""Metric reports: every field checked before a group commit, NaN/Infinity stored, a bad row fails only its request."""

from __future__ import annotations

import asyncio
import json
import math
import uuid

import pytest
import sqlalchemy as sa

from stalwart.api.errors import InvalidRequest
from stalwart.api.metric_values import encode, number
from stalwart.config import load_experiment_config
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments
from stalwart.master.experiments.intake import MetricsWriter, parse_reports
from stalwart.master.experiments.metric_reports import MAX_DEPTH, MAX_METRICS, MAX_NAME, MAX_REPORTS
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.searcher._common import WORST, MetricReader
from unit.master.async_helpers import run_fresh

CONFIG = """
name: nan
entrypoint: python3 train.py
hyperparameters: {lr: 0.1}
searcher: {name: single, metric: loss, max_length: {batches: 10}}
max_restarts: 0
"""


def _one(**fields) -> dict:
    report = {"group": "training", "steps_completed": 1, "metrics": {"loss": 0.5}}
    report.update(fields)
    return {"reports": [report]}


@pytest.mark.parametrize("fields, message", [
    ({"steps_completed": 2**63},
     "reports[0].steps_completed: expected an integer in 0..9223372036854775807, got 9223372036854775808"),
    ({"steps_completed": -1}, "reports[0].steps_completed: expected an integer in 0..9223372036854775807, got -1"),
    ({"trial_run_id": 2**31}, "reports[0].trial_run_id: expected an integer in 0..2147483647, got 2147483648"),
    ({"trial_run_id": "x"}, "reports[0].trial_run_id: expected an integer in 0..2147483647, got 'x'"),
    ({"report_time": "yesterday"}, "reports[0].report_time: expected a finite number"),
    ({"report_time": math.inf}, "reports[0].report_time: expected a finite number"),
    ({"report_time": 10**400}, "reports[0].report_time: expected a finite number"),
    ({"metrics": {"x" * (MAX_NAME + 1): 1.0}}, f"names are at most {MAX_NAME}"),
    ({"metrics": {f"m{i}": 1.0 for i in range(MAX_METRICS + 1)}}, f"at most {MAX_METRICS} metrics per report"),
])
def test_a_bad_field_is_refused_naming_it(fields, message):
    with pytest.raises(InvalidRequest) as err:
        parse_reports(1, _one(**fields))
    assert message in str(err.value)


def test_sizes_and_nesting_are_bounded():
    with pytest.raises(InvalidRequest, match=f"reports: at most {MAX_REPORTS} reports per request"):
        parse_reports(1, {"reports": [{}] * (MAX_REPORTS + 1)})
    deep: dict = {"x": 1.0}
    for _ in range(MAX_DEPTH + 1):
        deep = {"d": deep}
    with pytest.raises(InvalidRequest, match=f"reports\\[0\\].metrics.deep.d.*at most {MAX_DEPTH} levels deep"):
        parse_reports(1, _one(metrics={"deep": deep}))
    with pytest.raises(InvalidRequest, match="more than 100000 values in one report"):
        parse_reports(1, _one(metrics={"batch_metrics": [{"loss": 1.0}] * 60_000}))


def test_nan_and_infinities_are_encoded_and_everything_else_is_kept_as_sent():
    metrics = {"loss": math.nan, "up": math.inf, "down": -math.inf, "acc": 0.5, "n": 3, "big": 10**30,
               "ok": True, "note": "text", "none": None,
               "batch_metrics": [{"loss": math.nan}, {"loss": 1.0}], "per_class": {"cat": -math.inf, "dog": 0.1}}
    body = json.loads(json.dumps(_one(metrics=metrics)))  # bare NaN tokens, as Python's json writes them
    row = parse_reports(7, body)[0]
    assert row["metrics"] == {
        "loss": "NaN", "up": "Infinity", "down": "-Infinity", "acc": 0.5, "n": 3, "big": 10**30, "ok": True,
        "note": "text", "none": None, "batch_metrics": [{"loss": "NaN"}, {"loss": 1.0}],
        "per_class": {"cat": "-Infinity", "dog": 0.1}}
    assert row["metrics"] == encode(metrics)
    json.dumps(row["metrics"], allow_nan=False)  # storable in any JSON column
    assert (row["trial_id"], row["trial_run_id"], row["steps_completed"]) == (7, 0, 1)
    finite = _one(metrics={"a": 1.0, "b": [1, 2]})
    assert parse_reports(7, finite)[0]["metrics"] is finite["reports"][0]["metrics"]  # no copy when none is needed


def test_stored_values_read_back_as_numbers_for_searchers():
    assert [number(v) for v in (1, 2.5, "Infinity", "-Infinity", True, "x", None)] == \
        [1.0, 2.5, math.inf, -math.inf, None, None, None]
    assert math.isnan(number("NaN"))
    smaller, bigger = MetricReader("loss", True, None), MetricReader("acc", False, None)
    assert smaller.value({"loss": "NaN"}) == WORST and bigger.value({"acc": math.nan}) == WORST
    assert smaller.value({"loss": "Infinity"}) == WORST and smaller.value({"loss": "-Infinity"}) == -WORST
    assert bigger.value({"acc": "Infinity"}) == -WORST  # the best possible accuracy
    assert smaller.value({"loss": "n/a"}) is None and smaller.missing({"loss": "NaN"}, 1) is None


@pytest.fixture
def m(tmp_path):
    master = Master(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path))
    agents.register(master, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    yield master
    master.db.dispose()


def _running_trial(m, tmp_path) -> int:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('x')\n")
    experiments.create_experiment(m, CONFIG, pack_context(ctx).data, activate=True, owner="me")
    scheduling.tick(m)
    with m.db.begin() as conn:
        return conn.execute(sa.select(t.trials.c.id)).scalar_one()


def _stored(m) -> dict:
    with m.db.begin() as conn:
        return {r.steps_completed: r.metrics for r in conn.execute(sa.select(t.metrics))}


def test_a_row_the_database_refuses_fails_only_its_own_request_in_a_group_commit(m, tmp_path):
    trial_id = _running_trial(m, tmp_path)
    good = [parse_reports(trial_id, _one(steps_completed=s, metrics={"loss": s / 10})) for s in range(1, 6)]
    bad = [dict(good[0][0], steps_completed=2**63)]  # as if validation had missed it: SQLite refuses the row

    async def scenario():
        writer = MetricsWriter(m)
        requests = [asyncio.ensure_future(writer.submit(rows)) for rows in (*good[:2], bad, *good[2:])]
        await asyncio.sleep(0)  # every request is queued before the writer runs: one group
        assert writer.queue.qsize() == 6
        task = asyncio.create_task(writer.run_forever())
        try:
            return await asyncio.gather(*requests, return_exceptions=True)
        finally:
            task.cancel()

    results = run_fresh(scenario)
    assert [r is None for r in results] == [True, True, False, True, True, True]
    assert isinstance(results[2], OverflowError)
    assert _stored(m) == {s: {"loss": s / 10} for s in range(1, 6)}


def test_nan_values_are_stored_and_a_nan_searcher_metric_does_not_fail_the_trial(m, tmp_path):
    trial_id = _running_trial(m, tmp_path)
    body = json.loads(json.dumps({"reports": [
        {"group": "training", "steps_completed": 1, "metrics": {"loss": math.nan, "g": math.inf}},
        {"group": "validation", "steps_completed": 2, "metrics": {"loss": math.nan}},
    ]}))
    MetricsWriter(m)._write(parse_reports(trial_id, body))
    assert _stored(m) == {1: {"loss": "NaN", "g": "Infinity"}, 2: {"loss": "NaN"}}
    with m.db.begin() as conn:
        trial = conn.execute(sa.select(t.trials)).mappings().one()
    assert trial["state"] == "ACTIVE" and not trial["error_message"]


def test_a_custom_search_method_gets_a_stored_nan_as_a_float():
    from stalwart.searcher import make_search_method
    from stalwart.searcher.custom import Create as UserCreate, UserSearchMethod, ValidateAfter

    class Recorder(UserSearchMethod):
        def __init__(self):
            self.metrics = []

        def initial_operations(self, state):
            rid = uuid.UUID(int=1)
            return [UserCreate(rid, {}, None), ValidateAfter(rid, 10)]

        def on_trial_created(self, state, request_id):
            return []

        def on_validation_completed(self, state, request_id, metric, train_length):
            self.metrics.append(metric)
            return []

        def on_trial_closed(self, state, request_id):
            return []

        def on_trial_exited_early(self, state, request_id, exited_reason):
            return []

        def progress(self, state):
            return 0.0

    user = Recorder()
    config = load_experiment_config({"entrypoint": "python3 train.py", "checkpoint_storage": {
        "type": "shared_fs", "host_path": "/tmp"}, "searcher": {"name": "custom", "metric": "loss", "unit": "batches"}})
    s = make_search_method(config.config, custom_method=user)
    s.initial_operations()
    s.on_validation_completed(str(uuid.UUID(int=1)), {"loss": "NaN", "batches": 10}, 10)
    assert len(user.metrics) == 1 and isinstance(user.metrics[0], float) and math.isnan(user.metrics[0])
