"""The series API and the UI's JSON page models, on an in-process master app, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import math
from array import array

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.app import create_app
from stalwart.master.experiments import experiments
from stalwart.master.settings import MasterSettings

CONFIG = """
name: series-test
entrypoint: python3 train.py
hyperparameters:
  lr: {type: double, minval: 0.001, maxval: 1.0}
  global_batch_size: 32
records_per_epoch: 640
searcher: {name: random, metric: loss, smaller_is_better: true, max_trials: 3, max_length: {batches: 1000}}
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def client(request, tmp_path):
    db_url = request.getfixturevalue("pg_url") if request.param == "postgres" else f"sqlite:///{tmp_path / 'm.db'}"
    # the metrics index is built by hand in the tests that need it (the pages have fallbacks until it is ready)
    app = create_app(MasterSettings(db_url=db_url, home=tmp_path, ui_metrics_index=False))
    with TestClient(app) as c:
        token = c.post("/api/v1/auth/login", json={"username": "admin", "password": ""}).json()["token"]
        c.headers["Authorization"] = f"Bearer {token}"
        yield c, app


def _experiment(app, tmp_path, config=CONFIG) -> tuple[int, list[int]]:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print(1)\n")
    m = app.state.master
    exp_id, _ = experiments.create_experiment(m, config, pack_context(ctx).data, activate=False, owner="tester")
    with m.db.begin() as conn:
        ids = [r[0] for r in conn.execute(sa.select(t.trials.c.id).where(t.trials.c.experiment_id == exp_id))]
    return exp_id, ids


def _metrics(app, trial_id: int, group: str, n: int, value, every: int = 1) -> None:
    rows = [{"trial_id": trial_id, "trial_run_id": 1, "group_name": group, "steps_completed": s,
             "metrics": {"loss": value(s), "acc": 0.5, "note": "text"}, "report_time": 1000.0 + s}
            for s in range(every, n * every + 1, every)]
    with app.state.master.db.begin() as conn:
        conn.execute(t.metrics.insert(), rows)


def test_trial_series_downsamples_and_keeps_extremes(client, tmp_path):
    c, app = client
    _, (tid, *_rest) = _experiment(app, tmp_path)
    _metrics(app, tid, "training", 50_000,
             lambda s: 100.0 if s == 31_111 else (-100.0 if s == 40_000 else math.sin(s)))
    r = c.get(f"/api/v1/trials/{tid}/metrics/series",
              params={"group": "training", "metric": "loss", "max_points": 1000})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["raw_points"] == 50_000 and d["points"] <= 1000 and d["downsampled"]
    assert 100.0 in d["y"] and -100.0 in d["y"]
    assert d["x"][d["y"].index(100.0)] == 31_111
    assert d["x"] == sorted(d["x"]) and d["metrics"] == ["acc", "loss"]
    # zoom: only the range, in full detail
    z = c.get(f"/api/v1/trials/{tid}/metrics/series",
              params={"group": "training", "metric": "loss", "x_min": 100, "x_max": 199, "max_points": 1000}).json()
    assert z["x"] == list(range(100, 200)) and not z["downsampled"]
    # time axis and epochs axis (global_batch_size 32, records_per_epoch 640: 20 batches an epoch)
    tm = c.get(f"/api/v1/trials/{tid}/metrics/series",
               params={"group": "training", "x": "time", "max_points": 40}).json()
    assert tm["points"] <= 40 and tm["x"][0] == 1001.0
    ep = c.get(f"/api/v1/trials/{tid}/metrics/series",
               params={"group": "training", "metric": "loss", "x": "epochs", "x_max": 1}).json()
    assert ep["x"][-1] == 1.0 and ep["raw_points"] == 20


def test_a_long_series_shown_whole_comes_from_the_index_with_its_extremes(client, tmp_path):
    c, app = client
    _, (tid, other, _) = _experiment(app, tmp_path)

    def value(s):
        return 100.0 if s == 31_111 else (-100.0 if s == 40_000 else math.sin(s / 10.0))

    _metrics(app, tid, "training", 60_000, value)
    _metrics(app, other, "training", 60_000, value)
    idx = app.state.metrics_index
    idx.build()
    url = f"/api/v1/trials/{tid}/metrics/series"
    params = {"group": "training", "metric": "loss", "max_points": 1000}
    whole = c.get(url, params=params).json()
    assert whole["source"] == "summary" and whole["raw_points"] == 60_000 and whole["downsampled"]
    assert 100.0 in whole["y"] and -100.0 in whole["y"] and whole["x"][whole["y"].index(100.0)] == 31_111
    assert all(y == value(x) for x, y in zip(whole["x"], whole["y"], strict=True))  # real points at their own x
    assert whole["x"] == sorted(whole["x"]) and 500 <= whole["points"] <= 1000
    assert max(y for y in whole["y"] if abs(y) < 2) > 0.99 and min(y for y in whole["y"] if abs(y) < 2) < -0.99
    # the same chart read from the rows has the same extremes
    rows = c.get(url, params={**params, "x_min": 1, "x_max": 60_000}).json()
    assert rows["source"] == "raw" and max(rows["y"]) == max(whole["y"]) and min(rows["y"]) == min(whole["y"])
    # a finer chart than the leaves allow, a zoom, and the time axis read the rows
    assert c.get(url, params={**params, "max_points": 10_000}).json()["source"] == "raw"
    assert c.get(url, params={**params, "x": "time"}).json()["source"] == "raw"
    # a trial re-running over its points is read from the rows until it is rebuilt
    idx.trials[other].dirty = True
    again = c.get(f"/api/v1/trials/{other}/metrics/series", params=params).json()
    assert again["source"] == "raw" and 100.0 in again["y"] and again["raw_points"] == 60_000


def test_series_bad_input_is_a_clear_400_or_404(client, tmp_path):
    c, app = client
    exp_id, (tid, *_rest) = _experiment(app, tmp_path)
    for params, word in [({"x": "steps"}, "x:"), ({"max_points": 1}, "max_points"),
                         ({"max_points": 10**6}, "max_points")]:
        r = c.get(f"/api/v1/trials/{tid}/metrics/series", params=params)
        assert r.status_code == 400 and word in r.json()["error"]["message"]
    r = c.get("/api/v1/trials/999999/metrics/series")
    assert r.status_code == 404 and r.json()["error"]["message"] == "trial 999999 not found"
    r = c.get("/api/v1/experiments/999999/metrics/series")
    assert r.status_code == 404
    r = c.get(f"/api/v1/experiments/{exp_id}/metrics/series", params={"trial_ids": "1,x"})
    assert r.status_code == 400


def test_epochs_need_records_per_epoch(client, tmp_path):
    c, app = client
    _, (tid,) = _experiment(app, tmp_path, CONFIG.replace("records_per_epoch: 640\n", "").replace(
        "max_trials: 3", "max_trials: 1"))
    _metrics(app, tid, "validation", 5, float)
    r = c.get(f"/api/v1/trials/{tid}/metrics/series", params={"x": "epochs"})
    assert r.status_code == 400 and "records_per_epoch" in r.json()["error"]["message"]


@pytest.mark.parametrize("use_index", [False, True])
def test_experiment_series_puts_all_trials_on_one_grid(client, tmp_path, use_index, monkeypatch):
    c, app = client
    exp_id, ids = _experiment(app, tmp_path)
    for i, tid in enumerate(ids):
        _metrics(app, tid, "validation", 2000 - 500 * i, lambda s, i=i: 1.0 / s + i + (5.0 if s == 700 else 0.0))
    idx = app.state.metrics_index
    idx.build()
    if use_index:
        monkeypatch.setattr("stalwart.master.series.experiment.RAW_LIMIT", 10)
    d = c.get(f"/api/v1/experiments/{exp_id}/metrics/series", params={"max_points": 200}).json()
    assert d["source"] == ("summary" if use_index else "raw")
    assert d["metric"] == "loss" and len(d["x"]) == 200 and [tr["trial_id"] for tr in d["trials"]] == ids
    for i, tr in enumerate(d["trials"]):
        assert len(tr["y"]) == 200 and tr["raw_points"] == 2000 - 500 * i
        values = [v for v in tr["y"] if v is not None]
        assert max(values) == pytest.approx(1.0 / 700 + i + 5.0)  # the spike survives
        assert min(values) == pytest.approx(1.0 / (2000 - 500 * i) + i)
    # the shorter trials stop early: no values past their last step
    last = d["trials"][2]["y"]
    assert all(v is None for v, x in zip(last, d["x"], strict=True) if x > 1000 + 10)


def test_index_follows_new_rows_and_page_models(client, tmp_path):
    c, app = client
    exp_id, ids = _experiment(app, tmp_path)
    idx = app.state.metrics_index
    idx.build()
    _metrics(app, ids[0], "validation", 10, lambda s: 10.0 - s)
    _metrics(app, ids[1], "validation", 10, lambda s: 5.0 + s)
    idx.refresh(force=True)
    page = c.get(f"/api/v1/ui/experiments/{exp_id}", params={"sort": "best_validation", "order": "asc"}).json()
    assert [tr["id"] for tr in page["trials"]][:2] == [ids[0], ids[1]]
    assert page["trials"][0]["best_validation"] == {"value": 0.0, "steps_completed": 10}
    assert page["trials"][1]["latest_validation"] == {"value": 15.0, "steps_completed": 10}
    assert page["experiment"]["best"]["trial_id"] == ids[0]
    assert page["hp_keys"] == ["global_batch_size", "lr"] and page["job_placeholder"]["priority"] is None
    assert page["searcher"]["trials_by_state"] == {"PAUSED": 3}
    hp = c.get(f"/api/v1/ui/experiments/{exp_id}/hparams").json()
    assert [tr["value"] for tr in hp["trials"]] == [0.0, 6.0, None]
    r = c.get(f"/api/v1/ui/experiments/{exp_id}", params={"sort": "bogus"})
    assert r.status_code == 400 and "sort" in r.json()["error"]["message"]
    # ETag: an unchanged model answers 304
    first = c.get(f"/api/v1/ui/trials/{ids[0]}")
    assert first.status_code == 200 and first.json()["trial"]["best_validation"]["value"] == 0.0
    again = c.get(f"/api/v1/ui/trials/{ids[0]}", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code in (200, 304)


def test_experiments_list_filters_sorts_and_pages(client, tmp_path):
    c, app = client
    for name, label in [("alpha", "x"), ("beta", "y"), ("gamma", "x"), ("Alphabet", "z")]:
        labelled = CONFIG.replace("records_per_epoch", f"labels: [{label}]\nrecords_per_epoch")
        _experiment(app, tmp_path, labelled.replace("series-test", name))
    d = c.get("/api/v1/ui/experiments", params={"q": "alpha", "sort": "name", "order": "asc"}).json()
    assert [e["name"] for e in d["experiments"]] in (["Alphabet", "alpha"], ["alpha", "Alphabet"])
    assert d["total"] == 2
    d = c.get("/api/v1/ui/experiments", params={"label": "x"}).json()
    assert sorted(e["name"] for e in d["experiments"]) == ["alpha", "gamma"]
    d = c.get("/api/v1/ui/experiments", params={"limit": 3, "offset": 3, "sort": "id", "order": "asc"}).json()
    assert d["total"] == 4 and [e["name"] for e in d["experiments"]] == ["Alphabet"]
    assert d["experiments"][0]["num_trials"] == 3
    d = c.get("/api/v1/ui/experiments", params={"state": "PAUSED", "sort": "duration"}).json()
    assert d["total"] == 4
    for bad in ({"state": "NOPE"}, {"sort": "x"}, {"limit": 0}, {"archived": "maybe"}, {"limit": "ten"}):
        r = c.get("/api/v1/ui/experiments", params=bad)
        assert r.status_code == 400, bad


def test_html_errors_are_pages_without_tracebacks(client):
    c, _ = client
    for path in ("/experiments/424242", "/trials/abc", "/no/such/page"):
        r = c.get(path, headers={"Accept": "text/html"})
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
        assert "Traceback" not in r.text and 'id="error-message"' in r.text
    assert c.get("/api/v1/nope").headers["content-type"].startswith("application/json")
    assert c.get("/ui/static/v/../pages.py").status_code == 404
    assert c.get("/ui/static/v/..%2F..%2Fpages.py").status_code == 404
    r = c.get("/ui/static/v/js/dom.js")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    assert "script-src 'self'" in c.get("/").headers["content-security-policy"]


def test_binary_series_carry_the_same_values(client, tmp_path):
    c, app = client
    exp_id, ids = _experiment(app, tmp_path)
    for i, tid in enumerate(ids[:2]):
        _metrics(app, tid, "validation", 300 + 100 * i, lambda s, i=i: math.cos(s / 7) * (i + 1))
    app.state.metrics_index.build()
    url = f"/api/v1/experiments/{exp_id}/metrics/series?max_points=100"
    js = c.get(url).json()
    r = c.get(url + "&format=f32")
    assert r.headers["content-type"] == "application/octet-stream"
    body = r.content
    n = int.from_bytes(body[:4], "little")
    head = json.loads(body[4:4 + n])
    values = array("f")
    values.frombytes(body[4 + n + (-n % 4):])
    assert head["slots"] == len(js["x"]) == 100 and head["x"] == js["x"] and len(values) == 3 * 100
    for i, tr in enumerate(js["trials"]):
        assert head["trials"][i]["trial_id"] == tr["trial_id"] and "y" not in head["trials"][i]
        for v, w in zip(tr["y"], values[i * 100:(i + 1) * 100], strict=True):
            assert (v is None and w != w) or v == pytest.approx(w, rel=1e-6, abs=1e-6)
    assert c.get(url + "&format=xml").status_code == 400


def test_a_big_experiment_chart_waits_for_the_index(client, tmp_path, monkeypatch):
    c, app = client
    exp_id, ids = _experiment(app, tmp_path)
    _metrics(app, ids[0], "validation", 50, float)
    monkeypatch.setattr("stalwart.master.series.experiment.RAW_LIMIT", 10)
    r = c.get(f"/api/v1/experiments/{exp_id}/metrics/series")  # the index was not built (ui_metrics_index=False)
    assert r.status_code == 503 and "still being built" in r.json()["error"]["message"]
    assert c.get(f"/api/v1/trials/{ids[0]}/metrics/series").status_code == 200  # one trial reads its rows
    app.state.metrics_index.build()
    assert c.get(f"/api/v1/experiments/{exp_id}/metrics/series").json()["source"] == "summary"


def test_archive_logs_and_cluster_models(client, tmp_path):
    """Archive/unarchive (terminal experiments only), the archived filter, hp sorting, log tail filters, cluster."""
    c, app = client
    exp_id, ids = _experiment(app, tmp_path)
    r = c.post(f"/api/v1/experiments/{exp_id}/archive")
    assert r.status_code == 409 and r.json()["error"]["kind"] == "invalid_state"
    assert f"experiment {exp_id} is PAUSED; only a finished experiment" in r.json()["error"]["message"]
    assert c.post(f"/api/v1/experiments/{exp_id}/kill").status_code == 200
    r = c.post(f"/api/v1/experiments/{exp_id}/archive")
    assert r.status_code == 200 and r.json()["experiment"]["archived"] is True

    def listed(archived: str) -> list[int]:
        return [e["id"] for e in c.get("/api/v1/ui/experiments", params={"archived": archived}).json()["experiments"]]


    assert listed("false") == [] and listed("true") == [exp_id] and listed("all") == [exp_id]
    assert c.post(f"/api/v1/experiments/{exp_id}/unarchive").json()["experiment"]["archived"] is False
    assert listed("false") == [exp_id]
    assert c.post("/api/v1/experiments/424242/archive").status_code == 404

    page = c.get(f"/api/v1/ui/experiments/{exp_id}", params={"sort": "hp.lr", "order": "asc"}).json()
    lrs = [tr["hparams"]["lr"] for tr in page["trials"]]
    assert lrs == sorted(lrs) and len(lrs) == 3

    levels = ["DEBUG", "INFO", "WARNING", "ERROR"]
    with app.state.master.db.begin() as conn:
        conn.execute(t.task_logs.insert(), [
            {"trial_id": ids[0], "timestamp": 1000.0 + i, "level": levels[i % 4], "stdtype": "stdout",
             "source": "trial", "log": f"Line {i} {'Validation' if i % 2 else 'training'} 100%_done"}
            for i in range(40)])
    logs = c.get(f"/api/v1/ui/trials/{ids[0]}/logs", params={"tail": 5}).json()
    assert [e["log"].split()[1] for e in logs["logs"]] == ["35", "36", "37", "38", "39"] and logs["truncated"]
    assert logs["last_id"] == logs["logs"][-1]["id"]
    warn = c.get(f"/api/v1/ui/trials/{ids[0]}/logs", params={"level": "warning"}).json()["logs"]
    assert len(warn) == 20 and {e["level"] for e in warn} == {"WARNING", "ERROR"}
    found = c.get(f"/api/v1/ui/trials/{ids[0]}/logs", params={"q": "validation 100%_"}).json()["logs"]
    assert len(found) == 20 and all("Validation" in e["log"] for e in found)  # case-insensitive, % and _ literal
    assert c.get(f"/api/v1/ui/trials/{ids[0]}/logs", params={"q": "100%x"}).json()["logs"] == []
    assert c.get(f"/api/v1/ui/trials/{ids[0]}/logs", params={"level": "LOUD"}).status_code == 400

    cluster = c.get("/api/v1/ui/cluster").json()
    assert cluster["agents"] == [] and cluster["pending_allocations"] == 0
