"""Browser tests in Chromium for issue 16 ("the first hour"): what a new user saw wrong in the web UI."""

from __future__ import annotations

import json
from urllib.parse import urlparse

import pytest

from conftest import REPO

pytestmark = pytest.mark.integration

LOCAL = {"127.0.0.1", "localhost", "::1"}
DIGITS = REPO / "examples" / "digits"


def _create(cluster, *overrides: str) -> int:
    """The digits example created from the CLI with `--config` overrides; its id."""
    args = ["experiment", "create", str(DIGITS / "const.yaml"), str(DIGITS), "--json"]
    for o in overrides:
        args += ["--config", o]
    return json.loads(cluster.cli(*args, check=True).stdout)["experiment"]["id"]


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
    assert page.locator(".swagger-ui .opblock").count() >= 20  # every route of the API, not a stub
    assert "/api/v1/experiments" in page.text_content(".swagger-ui")
    assert refused == [], f"the docs page asked for outside resources: {refused}"


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
    shown = dict(zip(heads, cells))
    assert shown["Result"] == "ERROR" and shown["Exit code"] == "3" and shown["State"] == "TERMINATED", shown
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
