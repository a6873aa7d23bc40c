"""Bad input to the trial, checkpoint and series routes is a 400 naming what is wrong, never a 500."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from helpers_auth import as_admin
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.app import create_app
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments
from stalwart.master.identity import tokens
from stalwart.master.scheduling import scheduling
from stalwart.master.settings import MasterSettings

CONFIG = """
name: edges
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 10}}
"""
TOO_BIG = str(2**63)


@pytest.fixture
def running(tmp_path):
    """(client, exp_id, trial_id, allocation token) of an in-process master whose one trial has a live run."""
    app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, ui_metrics_index=False))
    m = app.state.master
    agents.register(m, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print(1)\n")
    exp_id, _ = experiments.create_experiment(m, CONFIG, pack_context(ctx).data, activate=True, owner="me")
    scheduling.tick(m)
    with m.db.begin() as conn:
        alloc = conn.execute(sa.select(t.allocations)).mappings().one()
    with TestClient(app) as client:
        as_admin(client)
        yield client, exp_id, alloc["trial_id"], m.allocation_token(alloc["id"])


def _bad(reply, word: str) -> None:
    assert reply.status_code == 400, reply.text
    assert word in reply.json()["error"]["message"]


@pytest.mark.parametrize("url, word", [
    (f"/api/v1/trials/{TOO_BIG}", "trial_id"),
    (f"/api/v1/trials/{TOO_BIG}/metrics/series", "trial_id"),
    (f"/api/v1/experiments/{TOO_BIG}/metrics/series", "exp_id"),
    ("/api/v1/checkpoints/" + "x" * 65, "uuid"),
])
def test_ids_out_of_range_are_a_400(running, url, word):
    client, *_ = running
    _bad(client.get(url), word)


def test_query_values_out_of_range_are_a_400(running):
    client, exp_id, trial_id, _token = running
    _bad(client.get(f"/api/v1/trials/{trial_id}/metrics", params={"after_steps": TOO_BIG}), "after_steps")
    _bad(client.get(f"/api/v1/trials/{trial_id}/metrics", params={"limit": 0}), "limit")
    _bad(client.get(f"/api/v1/trials/{trial_id}/logs", params={"after_id": -1}), "after_id")
    series = f"/api/v1/experiments/{exp_id}/metrics/series"
    _bad(client.get(series, params={"trial_ids": f"{trial_id},{TOO_BIG}"}), "trial_ids")
    _bad(client.get(series, params={"x_min": -1e308, "x_max": 1e308}), "x_min..x_max")
    _bad(client.get(series, params={"x_min": "nan"}), "x_min")
    _bad(client.get(series, params={"format": "xml"}), "format")
    _bad(client.get(f"/api/v1/trials/{trial_id}/metrics/series", params={"x": "steps"}), "query.x")


def test_a_trials_own_calls_check_their_bodies(running):
    client, _exp_id, trial_id, token = running
    auth = {tokens.ALLOCATION_HEADER: token}
    _bad(client.post(f"/api/v1/trials/{trial_id}/progress", json={"progress": 1.5}, headers=auth), "progress")
    _bad(client.post(f"/api/v1/trials/{trial_id}/early_exit", json={}, headers=auth), "reason")
    _bad(client.post("/api/v1/checkpoints", headers=auth, json={
        "trial_id": trial_id, "uuid": "6f1c7a4e-59a3-4b8e-9d0c-3f6f2a1d7e10", "resources": {"a": None},
        "metadata": {"steps_completed": 1}}), "resources")
    _bad(client.post(f"/api/v1/trials/{trial_id}/metrics", headers=auth, json={"reports": [
        {"group": "training", "steps_completed": 1, "metrics": {}, "report_time": -1}]}), "report_time")
    ok = client.post(f"/api/v1/trials/{trial_id}/progress", json={"progress": 0.5}, headers=auth)
    assert ok.status_code == 200 and ok.json() == {}
    assert client.post(f"/api/v1/trials/{trial_id}/progress", json={"progress": 0.5}).status_code == 401
