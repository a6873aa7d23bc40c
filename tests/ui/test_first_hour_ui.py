"""Browser tests in Chromium for issue 16 ("the first hour"): what a new user saw wrong in the web UI."""

from __future__ import annotations

import base64
import json
from urllib.parse import urlparse

import pytest
import yaml

from conftest import REPO
from stalwart.context import pack_context

pytestmark = pytest.mark.integration

LOCAL = {"127.0.0.1", "localhost", "::1"}
DIGITS = REPO / "examples" / "digits"


def _create(cluster, *overrides: str) -> int:
    """The digits example created from the CLI with `--config` overrides; its id."""
    args = ["experiment", "create", str(DIGITS / "const.yaml"), str(DIGITS), "--json"]
    for o in overrides:
        args += ["--config", o]
    return json.loads(cluster.cli(*args, check=True).stdout)["experiment"]["id"]


# Pixels of a chart's canvas in a series colour (saturated), not the greys of axes, grid and text.
COLOURED = """(sel) => { const c = document.querySelector(sel + ' canvas'); if (!c) return 0;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 100 && Math.max(d[i], d[i + 1], d[i + 2])
      - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++;
  return n; }"""

# One validation and one training report per trial, with the harness's step counters beside the metrics, and
# a searcher metric that never comes; then the trial keeps running until it is told to stop.
ONE_VALIDATION = """
import time
from stalwart import core

with core.init() as ctx:
    k = ctx.info.trial.hparams["k"]
    ctx.train.report_training_metrics(10, {"batches": 10, "epochs": 0, "loss": 1.0 / k})
    ctx.train.report_validation_metrics(10, {"batches": 10, "epochs": 0, "val_acc": 0.5 + k / 10})
    print("reported", flush=True)
    for _ in range(900):
        if ctx.preempt.should_preempt():
            break
        time.sleep(0.2)
"""


def _create_script(cluster, tmp_path, script: str, **config) -> int:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text(script)
    reply = cluster.client().post("/experiments", {"config": yaml.safe_dump(config), "activate": True,
                                                   "context": base64.b64encode(pack_context(ctx).data).decode()})
    return reply["experiment"]["id"]


def test_rest_api_docs_render_with_no_internet(ui_cluster, page):
    """/docs/rest-api/ takes Swagger UI from the master: with every non-local request refused it still
    renders the operations (it was blank offline: FastAPI links the assets from a CDN)."""
    refused: list[str] = []

    def local_only(route):
        if urlparse(route.request.url).hostname in LOCAL:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", local_only)
    res = page.goto(ui_cluster.url + "/docs/rest-api/")
    assert res.status == 200
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)
    paths = _paths_seen_scrolling(page)
    assert len(paths) >= 50 and "/api/v1/experiments" in paths, sorted(paths)  # the routes, not a stub
    assert refused == [], f"the docs page asked for outside resources: {refused}"


def _paths_seen_scrolling(page) -> set[str]:
    """The operation paths Swagger UI shows, scrolling to the bottom: past ~130 operations it renders only those
    near the viewport (lazily), so the DOM never holds them all at once."""
    seen: set[str] = set()
    for _ in range(400):
        seen.update(page.locator(".swagger-ui .opblock .opblock-summary-path").all_inner_texts())
        if page.evaluate("window.innerHeight + window.scrollY >= document.body.scrollHeight - 2"):
            return seen
        page.mouse.wheel(0, 800)
        page.wait_for_timeout(100)
    return seen


def test_finished_commands_stay_on_the_tasks_page_with_their_exit_code(ui_cluster, page):
    c = ui_cluster
    res = c.cli("cmd", "run", "sh", "-c", "echo bye from the task; exit 3")
    assert res.returncode == 3, res.stdout + res.stderr
    cmd_id = res.stdout.split("Launched command ")[1].split()[0]
    page.goto(c.url + "/tasks")
    row = f'#tasks-table tr[data-key="{cmd_id}"]'
    page.wait_for_selector(row)
    cells = page.eval_on_selector_all(f"{row} td", "tds => tds.map(td => td.textContent.trim())")
    heads = page.eval_on_selector_all("#tasks-table th", "ths => ths.map(th => th.textContent.trim())")
    shown = dict(zip(heads, cells, strict=True))
    assert shown["Result"] == "ERROR" and shown["Exit code"] == "3" and shown["State"] == "TERMINATED", shown
    assert shown["Ended because"] == "exited with status 3", shown
    assert shown["Ended"] != "—"
    page.click(f"{row} a")
    page.wait_for_function("() => [...document.querySelectorAll('#logs-panel .line .msg')]"
                           ".some(e => e.textContent.includes('bye from the task'))")


def test_an_experiment_too_big_for_every_agent_shows_why_it_waits(ui_cluster, page):
    c = ui_cluster
    exp_id = _create(c, "resources.slots_per_trial=64", "name=waits-forever")
    try:
        page.goto(f"{c.url}/experiments/{exp_id}")
        page.wait_for_selector("#exp-warnings:not([hidden]) .warning")
        text = page.text_content("#exp-warnings")
        assert ("resources.slots_per_trial: 64 slots asked, but the largest agent in pool 'default' has 3 "
                "(the pool has 3 in all); the trials will wait until agents that fit join") in text, text
    finally:
        c.client().post(f"/experiments/{exp_id}/kill", {})
    page.wait_for_selector("#exp-warnings[hidden]", state="attached")  # live: gone once the experiment is over


def test_charts_show_single_validations_and_never_default_to_a_counter(ui_cluster, page, tmp_path, shots):
    """Three running trials with one validation each (ASHA's first rung), whose searcher metric never came and
    whose metrics carry the `batches`/`epochs` counters: the experiment chart draws all three as markers of
    `val_acc` as soon as they arrive, and the trial page's training chart shows `loss`, not batches."""
    c = ui_cluster
    exp_id = _create_script(c, tmp_path, ONE_VALIDATION, name="single-validations", entrypoint="python3 train.py",
                            hyperparameters={"k": {"type": "categorical", "vals": [1, 2, 3]}},
                            searcher={"name": "grid", "metric": "validation_accuracy", "smaller_is_better": False,
                                      "max_length": {"batches": 100}, "max_concurrent_trials": 3})
    try:
        page.goto(f"{c.url}/experiments/{exp_id}")  # open while the trials start: the chart fills in live
        c.wait_for(lambda: sum(1 for t in c.client().get(f"/experiments/{exp_id}")["trials"]
                               if t.get("latest_validation")) == 3, timeout=120, what="three first validations")
        page.wait_for_function("() => document.querySelector('#curves').dataset.points === '3'", timeout=30_000)
        assert page.eval_on_selector("#metric", "s => s.value") == "validation\u0000val_acc"
        assert page.is_hidden("#curves .chart-empty")
        assert page.evaluate(COLOURED, "#curves") > 40, "the three single points are not drawn"
        page.screenshot(path=str(shots / "experiment-single-validations.png"))

        trial_id = c.client().get(f"/experiments/{exp_id}")["trials"][0]["id"]
        page.goto(f"{c.url}/trials/{trial_id}")
        page.wait_for_function("() => document.querySelector('#chart-training').dataset.drawn === '1' && "
                               "document.querySelector('#chart-validation').dataset.drawn === '1'")
        assert page.eval_on_selector("#metric-training", "s => s.value") == "loss"
        assert page.eval_on_selector("#metric-validation", "s => s.value") == "val_acc"
        for chart in ("#chart-training", "#chart-validation"):
            assert page.evaluate(COLOURED, chart) > 10, f"{chart}: the single point is not drawn"
        page.screenshot(path=str(shots / "trial-single-validation.png"))
    finally:
        c.client().post(f"/experiments/{exp_id}/kill", {})


def test_hyperparameter_view_follows_the_config_and_progress_the_state(ui_cluster, page, tmp_path, shots):
    """Constants are listed apart (no axis with an invented range), a log hyperparameter gets a log axis, and an
    experiment that failed does not show 100% searcher progress."""
    c = ui_cluster
    exp_id = _create_script(c, tmp_path, ONE_VALIDATION, name="hp-view", entrypoint="python3 train.py",
                            hyperparameters={"lr": {"type": "log", "base": 10, "minval": -3, "maxval": -2},
                                             "width": {"type": "int", "minval": 8, "maxval": 64},
                                             "k": {"type": "categorical", "vals": [1, 2, 3]},
                                             "dropout": 0.25, "optimizer": {"type": "const", "val": "sgd"}},
                            searcher={"name": "random", "metric": "val_acc", "smaller_is_better": False,
                                      "max_trials": 4, "max_length": {"batches": 100}})
    c.client().post(f"/experiments/{exp_id}/pause", {})
    page.goto(f"{c.url}/experiments/{exp_id}#hparams")
    page.wait_for_selector("#parcoords[data-axes]", state="attached")
    axes = dict(json.loads(page.get_attribute("#parcoords", "data-axes")))
    assert axes == {"k": "category", "lr": "log", "width": "linear", "val_acc": "linear"}, axes
    assert page.get_attribute('#scatters figure[data-hparam="lr"]', "data-scale") == "log"
    assert page.text_content("#hp-constants dd[data-constant=dropout]") == "0.25"
    assert page.text_content("#hp-constants dd[data-constant=optimizer]") == "sgd"
    page.screenshot(path=str(shots / "experiment-hparams-config.png"), full_page=True)
    c.client().post(f"/experiments/{exp_id}/kill", {})

    failing = _create_script(c, tmp_path, "import sys\nsys.exit(3)\n", name="fails-at-once",
                             entrypoint="python3 train.py", max_restarts=0,
                             searcher={"name": "single", "metric": "val_acc", "max_length": {"batches": 100}})
    c.wait_for(lambda: c.client().get(f"/experiments/{failing}")["experiment"]["state"] == "ERROR", timeout=120,
               what="the experiment to fail")
    page.goto(f"{c.url}/experiments/{failing}")
    shown = page.text_content("#facts dd[data-fact='Progress']")
    assert shown == "0% (failed)", shown
    page.goto(f"{c.url}/?q=fails-at-once")
    page.wait_for_selector(f'#experiments tr[data-key="{failing}"]')
    assert "0% (failed)" in page.text_content(f'#experiments tr[data-key="{failing}"]')
