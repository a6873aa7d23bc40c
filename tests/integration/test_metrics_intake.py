"""Metric intake on real clusters: a poisoned report fails only itself beside 400 valid ones; NaN/Infinity
round-trip."""

from __future__ import annotations

import base64
import json
import math
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from integration.helpers import metrics
from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster

TRIALS = 4
REPORTS_PER_TRIAL = 100

TRAIN_PY = textwrap.dedent('''\
    """Reports NaN and infinities through the Core API, leaves its token for the test (in TOKEN_DIR: printed, it
    would be masked in the stored logs), then waits to be killed."""
    import math
    import os
    import pathlib
    import time

    from stalwart import core

    with core.init() as ctx:
        ctx.train.report_training_metrics(1, {"loss": math.nan, "up": math.inf, "down": -math.inf, "ok": 0.5,
                                              "per_class": {"cat": math.nan}})
        ctx.train.report_validation_metrics(1, {"loss": math.nan})
        ctx.train.flush()
        token = pathlib.Path(os.environ["TOKEN_DIR"], os.environ["STALWART_TRIAL_ID"])
        token.with_suffix(".part").write_text(os.environ["STALWART_ALLOCATION_TOKEN"])
        token.with_suffix(".part").rename(token)
        time.sleep(600)
''')

CONFIG = f"""
name: intake
entrypoint: python3 train.py
hyperparameters:
  x: {{type: double, minval: 0, maxval: 1}}
searcher:
  name: random
  metric: loss
  max_trials: {TRIALS}
  max_concurrent_trials: {TRIALS}
  max_length: {{batches: 1000}}
max_restarts: 0
environment: {{environment_variables: [TOKEN_DIR=TOKEN_DIR_PATH]}}
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cluster4(request, tmp_path):
    """A cluster of either database with room for TRIALS trials at once."""
    db_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    with LocalTestCluster(tmp_path / "home", db_url, slots=TRIALS) as c:
        yield c


def _start(c, tmp_path) -> tuple[int, dict[int, str]]:
    """Experiment id and {trial id: allocation token} once every trial has reported and left its token."""
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text(TRAIN_PY)
    token_dir = tmp_path / "tokens"
    token_dir.mkdir()
    config = CONFIG.replace("TOKEN_DIR_PATH", str(token_dir))
    exp_id = c.client().post("/experiments", {"config": config, "activate": True,
                                              "context": base64.b64encode(pack_context(ctx).data).decode()})[
        "experiment"]["id"]

    def tokens():
        found = {int(f.name): f.read_text() for f in token_dir.iterdir() if f.suffix != ".part"}
        return len(found) == TRIALS and found

    return exp_id, c.wait_for(tokens, timeout=180, what=f"{TRIALS} trials to report and leave their tokens")


def test_a_poisoned_report_fails_alone_beside_400_valid_ones_and_nan_round_trips(cluster4, tmp_path):
    c = cluster4
    exp_id, tokens = _start(c, tmp_path)
    local = threading.local()

    def post(trial_id: int, body: str) -> httpx.Response:
        if not hasattr(local, "http"):
            local.http = httpx.Client(base_url=c.url, timeout=60)
        return local.http.post(f"/api/v1/trials/{trial_id}/metrics", content=body, headers={
            "x-allocation-token": f"Bearer {tokens[trial_id]}", "content-type": "application/json"})

    def report(steps: int, value) -> str:
        return json.dumps({"reports": [{"group": "training", "steps_completed": steps, "trial_run_id": 1,
                                        "metrics": {"loss": value}}]})

    jobs = [(tid, report(1000 + k, k / 10)) for k in range(REPORTS_PER_TRIAL) for tid in tokens]
    poisoned_trial = next(iter(tokens))
    jobs.insert(len(jobs) // 2, (poisoned_trial, report(2**63, 1.0)))
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda job: post(*job), jobs))

    bad = answers.pop(len(jobs) // 2)
    assert bad.status_code == 400, bad.text
    assert "reports[0].steps_completed: expected an integer in 0..9223372036854775807, got 9223372036854775808" \
        in bad.json()["error"]["message"]
    assert [a.status_code for a in answers] == [200] * (TRIALS * REPORTS_PER_TRIAL)
    for tid in tokens:
        stored = {m["steps_completed"]: m["metrics"] for m in metrics(c, tid, "training")}
        assert {s: v for s, v in stored.items() if s >= 1000} == {
            1000 + k: {"loss": k / 10} for k in range(REPORTS_PER_TRIAL)}
        # sent by the harness as floats: stored and read back as Determined's wire strings
        assert stored[1] == {"loss": "NaN", "up": "Infinity", "down": "-Infinity", "ok": 0.5,
                             "per_class": {"cat": "NaN"}}
        assert metrics(c, tid, "validation")[0]["metrics"] == {"loss": "NaN"}

    # Python's json writes bare NaN / Infinity tokens: the master takes them and stores the strings
    tid = poisoned_trial
    raw = json.dumps({"reports": [{"group": "extra", "steps_completed": 5,
                                   "metrics": {"a": math.nan, "b": -math.inf, "c": [math.inf, 1]}}]})
    assert "NaN" in raw and post(tid, raw).status_code == 200
    assert metrics(c, tid, "extra")[0]["metrics"] == {"a": "NaN", "b": "-Infinity", "c": ["Infinity", 1]}

    # charts skip the non-numbers; the searcher took the NaN validation without failing any trial
    series = c.client().get(f"/trials/{tid}/metrics/series", group="training", metric="ok")
    assert series["y"] == [0.5] and "up" not in series["metrics"]
    assert c.client().get(f"/trials/{tid}/metrics/series", group="training", metric="up")["y"] == []
    exp = c.client().get(f"/experiments/{exp_id}")
    assert exp["experiment"]["state"] == "ACTIVE"
    assert [t["state"] for t in exp["trials"]] == ["ACTIVE"] * TRIALS
    c.client().post(f"/experiments/{exp_id}/kill")
