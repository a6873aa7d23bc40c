"""Browser tests in Chromium: escaping of user text, clear messages for bad input, 404 pages, job queue and tasks."""

from __future__ import annotations

import base64
import pathlib
import tempfile

import pytest
import sqlalchemy as sa
import yaml
from fastapi.testclient import TestClient

from conftest import UICluster
from stalwart.context import pack_context
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings

pytestmark = pytest.mark.integration

EVIL = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
NOT_RUN = ("() => window.__pwned === undefined && "
           "document.querySelectorAll('img[src=x], script:not([src]):not([type])').length === 0")


def _create(cluster, tmp_path, activate: bool = False, **changes) -> dict:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print('never runs')\n")
    cfg = {"name": "plain", "entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1},
           "searcher": {"name": "single", "metric": "acc", "smaller_is_better": False, "max_length": {"batches": 10}}}
    cfg.update(changes)
    reply = cluster.client().post("/experiments", {"config": yaml.safe_dump(cfg), "activate": activate,
                                                   "context": base64.b64encode(pack_context(ctx).data).decode()})
    exp = reply["experiment"]
    exp["trial_id"] = cluster.client().get(f"/experiments/{exp['id']}")["trials"][0]["id"]
    return exp


def _shown_as_text(page, selector: str) -> None:
    page.wait_for_function(
        "([sel, evil]) => [...document.querySelectorAll(sel)].some(e => e.textContent.includes(evil))",
        arg=[selector, EVIL])
    assert page.evaluate(NOT_RUN), "user text was interpreted as HTML"


def test_user_text_is_escaped_everywhere(ui_cluster, page, tmp_path):
    c = ui_cluster
    exp = _create(c, tmp_path, name=EVIL, description=EVIL, labels=[EVIL, "ok"],
                  hyperparameters={"lr": 0.1, "note": EVIL, EVIL: 1})
    tid = exp["trial_id"]
    engine = sa.create_engine(c.db_url)
    with engine.begin() as conn:  # hostile log lines of the trial (an agent ships only its own allocations' lines)
        for i in range(3):
            conn.execute(sa.text("INSERT INTO task_logs (trial_id, timestamp, level, stdtype, source, log) VALUES "
                                 "(:t, :ts, 'INFO', 'stdout', 'task', :log)"),
                         {"t": tid, "ts": 1.0 + i, "log": f"line {i} {EVIL}"})
    with engine.begin() as conn:  # a metric whose *name* is hostile, straight into the metrics table
        conn.execute(sa.text("INSERT INTO metrics (trial_id, trial_run_id, group_name, steps_completed, metrics, "
                             "report_time) VALUES (:t, 1, 'validation', 5, :m, 1.0)"),
                     {"t": tid, "m": f'{{"acc": 0.5, "{EVIL.replace(chr(34), chr(92) + chr(34))}": 1.5}}'})
    engine.dispose()

    page.goto(f"{c.url}/?q=pwned")
    _shown_as_text(page, "#experiments a.name")
    _shown_as_text(page, "#experiments .chip")

    page.goto(f"{c.url}/experiments/{exp['id']}")
    _shown_as_text(page, "#exp-name")
    _shown_as_text(page, "#facts dd")  # description and labels
    _shown_as_text(page, "#trials th")  # a hyperparameter name
    _shown_as_text(page, "#trials td")  # a hyperparameter value
    page.wait_for_function("() => document.querySelectorAll('#metric option').length >= 2", timeout=20_000)
    _shown_as_text(page, "#metric option")
    assert EVIL in page.title()
    page.click("#tabs button[data-tab=config]")
    _shown_as_text(page, "#config")
    page.click("#tabs button[data-tab=hparams]")
    page.wait_for_selector("#parcoords canvas")
    assert page.evaluate(NOT_RUN)

    page.goto(f"{c.url}/trials/{tid}")
    _shown_as_text(page, "#exp-link")
    _shown_as_text(page, "#hparams-table td")
    _shown_as_text(page, "#logs-panel .line .msg")
    _shown_as_text(page, "#metric-validation option")
    page.fill("#logs-panel input[name=q]", "line 1")
    page.wait_for_function("() => document.querySelectorAll('#logs-panel .line').length === 1")
    _shown_as_text(page, "#logs-panel .line .msg")  # with the match highlighted, still text


def test_not_found_pages(ui_cluster, page, shots):
    for path, message in [("/experiments/987654", "experiment 987654 not found"),
                          ("/trials/987654", "trial 987654 not found"), ("/trials/abc", "trial 'abc' not found"),
                          ("/no/such/page", "There is no page at /no/such/page")]:
        res = page.goto(ui_cluster.url + path)
        assert res.status == 404, path
        assert message in page.text_content("#error-message")
        assert "Traceback" not in page.content()
        if path == "/experiments/987654":
            page.screenshot(path=str(shots / "not-found.png"))


def test_kill_of_a_finished_experiment_shows_the_api_message(ui_cluster, page, tmp_path):
    c = ui_cluster
    exp = _create(c, tmp_path, name="finished-one")
    c.client().post(f"/experiments/{exp['id']}/kill", {})
    c.wait_for(lambda: c.client().get(f"/experiments/{exp['id']}")["experiment"]["state"] == "CANCELED",
               what="the experiment to be CANCELED")
    page.goto(f"{c.url}/?q=finished-one&archived=all")
    page.check(f'#experiments tr[data-key="{exp["id"]}"] input[type=checkbox]')
    page.click("#bulk button[data-action=kill]")
    page.click("#bulk button[data-action=kill]")  # the second click confirms
    page.wait_for_selector("#flash:not([hidden])")
    text = page.text_content("#flash")
    assert f"experiment {exp['id']} is already CANCELED" in text and "1 failed" in text
    assert "Traceback" not in text

    page.goto(f"{c.url}/experiments/{exp['id']}")
    assert page.is_disabled("#actions button[data-action=kill]")
    page.click("#actions button[data-action=archive]")
    page.wait_for_function("() => document.querySelector('#flash').textContent.includes('archive: done')")
    page.wait_for_function(
        "() => document.querySelector('#actions button[data-action=archive]').textContent === 'Unarchive'")
    assert c.client().get(f"/experiments/{exp['id']}")["experiment"]["archived"] is True
    page.goto(f"{c.url}/?q=finished-one")  # the default list hides archived experiments
    page.wait_for_selector("#experiments")
    assert page.locator(f'#experiments tr[data-key="{exp["id"]}"]').count() == 0


def test_jobs_and_tasks_pages_show_their_api_or_say_it_is_missing(ui_cluster, page, shots):
    """Each page renders its API's answer, or says plainly that the master has no such API (404)."""
    for path, box, table, missing in [("/jobs", "#jobs", "#jobs-table", "The job queue is not available"),
                                       ("/tasks", "#tasks", "#tasks-table", "Commands and tasks are not available")]:
        api = ui_cluster.api_get("/api/v1" + path)
        page.goto(ui_cluster.url + path)
        if api.status_code == 404:
            page.wait_for_selector(f"{box}[data-state=unavailable]")
            assert missing in page.text_content(box)
            page.screenshot(path=str(shots / f"{path[1:]}-unavailable.png"))
        else:
            assert api.status_code == 200, api.text
            page.wait_for_selector(f"{box}[data-state=ready] {table}")
            assert "not available" not in page.text_content(box)


def _master_has_job_api() -> bool:
    """Whether the master app answers GET /api/v1/jobs (the job-queue API, branch `sched`) with anything but 404."""
    with tempfile.TemporaryDirectory() as home:
        app = create_app(MasterSettings(db_url=f"sqlite:///{home}/probe.db", home=pathlib.Path(home),
                                        ui_metrics_index=False))
        try:
            return TestClient(app).get("/api/v1/jobs").status_code != 404
        finally:
            app.state.master.db.dispose()


@pytest.fixture(scope="module")
def queue_cluster(tmp_path_factory):
    """A master with no agent: every active experiment waits in the job queue."""
    with UICluster(tmp_path_factory.mktemp("queue") / "home", agents=0) as c:
        yield c


@pytest.mark.skipif(not _master_has_job_api(), reason="the master answers 404 on GET /api/v1/jobs: the job-queue "
                    "API (branch sched) is not merged yet; this test runs as soon as it is")
def test_job_queue_priority_and_position(queue_cluster, new_page, shots, tmp_path):
    """Three queued experiments: bad priorities refused with a message, a priority set, a job moved, as the API says."""
    c = queue_cluster
    page = new_page(c)
    exp_ids = [_create(c, tmp_path, activate=True, name=f"queued-{i}")["id"] for i in range(3)]

    def api_jobs() -> list[dict]:
        jobs = c.api_get("/api/v1/jobs").json()["jobs"]
        return [j for j in jobs if j["type"] == "EXPERIMENT" and j["entity_id"] in exp_ids]

    def order() -> list[str]:
        return [j["job_id"] for j in api_jobs()]

    def shown() -> list[str]:
        ours = set(order())
        keys = page.eval_on_selector_all("#jobs-table tbody tr[data-key]", "rows => rows.map(r => r.dataset.key)")
        return [k for k in keys if k in ours]

    c.wait_for(lambda: len(api_jobs()) == 3, timeout=30, what="the three experiments in the job queue")
    page.goto(c.url + "/jobs")
    page.wait_for_function("(n) => document.querySelectorAll('#jobs-table tbody tr[data-key]').length >= n", arg=3)
    assert shown() == order()

    # move the first of our jobs down one place
    first, second = order()[:2]
    page.click(f'#jobs-table tr[data-key="{first}"] button[title="Move down"]')
    c.wait_for(lambda: order().index(first) > order().index(second), timeout=10,
               what=f"job {first} to be behind {second}")
    page.wait_for_function("([a, b]) => { const k = [...document.querySelectorAll('#jobs-table tbody tr[data-key]')]"
                           ".map(r => r.dataset.key); return k.indexOf(a) > k.indexOf(b); }", arg=[first, second])

    # priorities outside 1..99 are refused with a message; a good one is set
    target = api_jobs()[-1]
    row = f'#jobs-table tr[data-key="{target["job_id"]}"]'
    for bad in ("0", "100", "4.5"):
        page.fill(f"{row} input.priority", bad)
        page.click(f"{row} .priority-edit button")
        page.wait_for_selector("#flash:not([hidden])")
        assert "Priority must be a whole number from 1 to 99" in page.text_content("#flash")
        page.click("#flash .flash-close")
    assert next(j for j in api_jobs() if j["job_id"] == target["job_id"])["priority"] == target["priority"]
    new = 7 if target["priority"] != 7 else 8
    page.fill(f"{row} input.priority", str(new))
    page.click(f"{row} .priority-edit button")
    page.wait_for_function("() => document.querySelector('#flash').dataset.kind === 'info'")
    assert next(j for j in api_jobs() if j["job_id"] == target["job_id"])["priority"] == new
    page.wait_for_function("([sel, v]) => document.querySelector(sel).value === v",
                           arg=[f"{row} input.priority", str(new)])
    page.screenshot(path=str(shots / "jobs.png"))

    # the experiment page shows its place in the queue and its priority
    page.goto(f"{c.url}/experiments/{target['entity_id']}")
    page.wait_for_function("(v) => document.querySelector('#facts dd[data-fact=Priority]')?.textContent === v",
                           arg=str(new))
    assert page.text_content("#facts dd[data-fact='Queue position']").strip().isdigit()


def test_cluster_page_and_live_status(ui_cluster, page):
    page.goto(ui_cluster.url + "/cluster")
    page.wait_for_selector("#agents-table tbody tr[data-key=agent-0]")
    page.wait_for_selector("#live-status[data-state=on]")
    assert "default" in page.text_content("#pools-table")
