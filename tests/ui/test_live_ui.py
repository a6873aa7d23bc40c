"""Browser tests in Chromium: the digits example created from the CLI, watched live, paused and activated from the
page."""

from __future__ import annotations

import json
import time

import pytest

from conftest import REPO

DIGITS = REPO / "examples" / "digits"
# The log panel shows at least one INFO line (the level filter is off).
SOME_INFO_LINE = "() => [...document.querySelectorAll('#logs-panel .line .lvl')].some(e => e.textContent === 'INFO')"

pytestmark = pytest.mark.integration


def _create(cluster, *overrides: str) -> int:
    args = ["experiment", "create", str(DIGITS / "const.yaml"), str(DIGITS), "--json"]
    for o in overrides:
        args += ["--config", o]
    res = cluster.cli(*args, check=True)
    return json.loads(res.stdout)["experiment"]["id"]


def _int_attr(page, selector: str, attr: str) -> int:
    v = page.get_attribute(selector, attr)
    return int(v) if v else 0


def _wait_growth(page, selector: str, attr: str, above: int, timeout: float = 30) -> int:
    page.wait_for_function(
        "([sel, attr, n]) => { const e = document.querySelector(sel); "
        "return e && Number(e.getAttribute(attr) || 0) > n; }",
        arg=[selector, attr, above], timeout=timeout * 1000)
    return _int_attr(page, selector, attr)


def _state(page, selector: str, state: str, timeout: float = 30) -> None:
    page.wait_for_function("([sel, s]) => document.querySelector(sel)?.textContent.trim() === s",
                           arg=[selector, state], timeout=timeout * 1000)


@pytest.fixture(scope="module")
def search_exp(ui_cluster) -> int:
    """An ASHA search of the digits example, created first so that its trials train during the digits test."""
    return _create(ui_cluster, *[
        "searcher={name: adaptive_asha, metric: validation_accuracy, smaller_is_better: false, max_trials: 4, "
        "max_concurrent_trials: 2, time_metric: batches, max_time: 400, max_rungs: 2, mode: aggressive}",
        "hyperparameters.learning_rate={type: log, base: 10, minval: -3, maxval: -0.5}",
        "hyperparameters.hidden={type: categorical, vals: [16, 32, 64, 128]}",
        "name=digits-asha-search",
    ])


def test_digits_live_from_the_cli(ui_cluster, search_exp, page, shots):
    c = ui_cluster
    t0 = time.monotonic()
    mark = lambda what: print(f"{time.monotonic() - t0:6.1f} s  {what}")  # noqa: E731 - shown with -s
    exp_id = _created_and_listed(c, page, mark)
    mark('listed')
    trial_id = _open_the_experiment(page, exp_id)
    mark('trial row')
    _pause_and_activate(c, page, exp_id, trial_id)
    mark('paused+activated')
    _curve_grows(page)
    mark('curve grew')
    _trial_page_grows(page, trial_id)
    mark('logs+curve grew')
    _log_search_and_level(page)
    mark('filters')
    _trial_completes(page)
    mark('completed')
    page.screenshot(path=str(shots / "trial.png"), full_page=True)

    page.goto(f"{c.url}/experiments/{exp_id}")
    page.wait_for_function("() => document.querySelector('#curves').dataset.drawn === '1'")
    _state(page, "#exp-state", "COMPLETED")
    page.screenshot(path=str(shots / "experiment-digits.png"), full_page=True)


def _created_and_listed(c, page, mark) -> int:
    """The new experiment appears in the list without a reload."""
    page.goto(c.url + "/")
    page.wait_for_selector("#experiments")
    page.evaluate("window.__sameDocument = 'yes'")

    exp_id = _create(c, "hyperparameters.batch_sleep=0.02")
    mark('created')
    page.wait_for_selector(f'#experiments tr[data-key="{exp_id}"]', timeout=10_000)
    assert page.evaluate("window.__sameDocument") == "yes"
    return exp_id


def _open_the_experiment(page, exp_id: int) -> int:
    """The experiment's page, opened from the list, shows its trial (whose id is returned)."""
    page.click(f'#experiments tr[data-key="{exp_id}"] a.name')
    page.wait_for_selector("#trials tbody tr[data-key]")
    page.evaluate("window.__sameDocument = 'experiment'")
    trial_id = int(page.get_attribute("#trials tbody tr[data-key]", "data-key"))
    assert page.text_content("#exp-name") == "digits-mlp"
    return trial_id


def _pause_and_activate(c, page, exp_id: int, trial_id: int) -> None:
    """Pause and activate from the page, once the trial has started training."""
    c.wait_for(lambda: c.client().get(f"/trials/{trial_id}")["trial"]["steps_completed"] > 0, timeout=60,
               what="the trial to report its first metrics")
    page.click("#actions button[data-action=pause]")
    _state(page, "#exp-state", "PAUSED")
    assert c.client().get(f"/experiments/{exp_id}")["experiment"]["state"] == "PAUSED"
    page.click("#actions button[data-action=activate]")
    _state(page, "#exp-state", "ACTIVE")
    assert c.client().get(f"/experiments/{exp_id}")["experiment"]["state"] == "ACTIVE"


def _curve_grows(page) -> None:
    """The learning curve grows live: validations arrive every 100 batches."""
    first = _wait_growth(page, "#curves", "data-points", 0, timeout=60)
    _wait_growth(page, "#curves", "data-points", first, timeout=30)
    assert page.evaluate("window.__sameDocument") == "experiment"


def _trial_page_grows(page, trial_id: int) -> None:
    """The trial page: logs arrive while it trains, and its training curve grows."""
    page.click(f'#trials tr[data-key="{trial_id}"] a')
    page.wait_for_selector("#logs-panel .line")
    page.evaluate("window.__sameDocument = 'trial'")
    lines = _int_attr(page, "#logs-panel", "data-lines")
    points = _int_attr(page, "#chart-training", "data-points")
    _wait_growth(page, "#logs-panel", "data-lines", lines, timeout=40)
    _wait_growth(page, "#chart-training", "data-points", points, timeout=40)
    assert page.evaluate("window.__sameDocument") == "trial"


def _log_search_and_level(page) -> None:
    """The log panel's search and level filter."""
    page.fill("#logs-panel input[name=q]", "validation at")
    page.wait_for_function("() => [...document.querySelectorAll('#logs-panel .line .msg')].length > 0 && "
                           "[...document.querySelectorAll('#logs-panel .line .msg')]"
                           ".every(e => e.textContent.includes('validation at'))",
                           timeout=30_000)
    page.fill("#logs-panel input[name=q]", "")
    page.wait_for_function(SOME_INFO_LINE)
    page.select_option("#logs-panel select[name=level]", "WARNING")
    page.wait_for_function("() => ![...document.querySelectorAll('#logs-panel .line .lvl')]"
                           ".some(e => ['DEBUG', 'INFO'].includes(e.textContent))")
    page.select_option("#logs-panel select[name=level]", "")
    page.wait_for_function(SOME_INFO_LINE)


def _trial_completes(page) -> None:
    """To the end: the trial completes, with checkpoints and a restart history of two runs (paused, resumed)."""
    _state(page, "#trial-state", "COMPLETED", timeout=90)
    page.wait_for_selector("#checkpoints-table tbody tr[data-key] a[download]")
    href = page.get_attribute("#checkpoints-table tbody tr[data-key] a[download]", "href")
    assert href.startswith("/api/v1/checkpoints/") and href.endswith("/download")
    page.wait_for_function("() => document.querySelectorAll('#runs-table tbody tr[data-key]').length >= 2")
    page.wait_for_function("() => Number(document.querySelector('#chart-validation').dataset.points) >= 4")


def test_search_experiment_pages(ui_cluster, search_exp, page, shots):
    """An ASHA search of the digits example: curves of all trials, sorting, and the hyperparameter views."""
    c = ui_cluster
    exp_id = search_exp
    page.goto(f"{c.url}/experiments/{exp_id}")
    _state(page, "#exp-state", "COMPLETED", timeout=180)  # ASHA adds its trials as rungs fill
    page.wait_for_function("() => document.querySelectorAll('#trials tbody tr[data-key]').length === 4", timeout=30_000)
    page.wait_for_function("() => Number(document.querySelector('#curves').dataset.series) === 4 && "
                           "Number(document.querySelector('#curves').dataset.points) >= 4", timeout=30_000)
    # sort the trials table by the best validation accuracy, both ways
    page.click("#trials th button[data-sort=best_validation]")
    page.wait_for_function("() => new URL(location.href).searchParams.get('sort') === 'best_validation'")
    page.wait_for_function("() => document.querySelector('#trials th[aria-sort]')?.textContent.includes('Best')")
    best = page.eval_on_selector_all("#trials tbody tr[data-key]", "rows => rows.map(r => r.dataset.key)")
    page.click("#trials th button[data-sort=best_validation]")
    page.wait_for_function("(first) => document.querySelector('#trials tbody tr[data-key]').dataset.key !== first",
                           arg=best[0])
    assert page.eval_on_selector_all("#trials tbody tr[data-key]", "rows => rows.map(r => r.dataset.key)") == best[::-1]
    # metric picker and x axis
    page.select_option("#xaxis", "time")
    page.wait_for_function("() => document.querySelector('#curves').dataset.xaxis === 'time'")
    page.select_option("#xaxis", "batches")
    page.wait_for_function("() => document.querySelector('#curves').dataset.xaxis === 'batches'")
    page.screenshot(path=str(shots / "experiment-search.png"), full_page=True)
    page.click("#tabs button[data-tab=hparams]")
    page.wait_for_function("() => document.querySelector('#parcoords').dataset.trials === '4'")
    assert page.locator("#scatters figure").count() == 2  # hidden, learning_rate: the constants are listed apart
    assert page.locator("#hp-constants dd[data-constant]").count() == 2  # batch_sleep, batch_size
    page.screenshot(path=str(shots / "experiment-hparams.png"), full_page=True)
    page.click("#tabs button[data-tab=config]")
    assert "adaptive_asha" in page.text_content("#config")

    page.goto(c.url + "/")
    page.wait_for_selector(f'#experiments tr[data-key="{exp_id}"]')
    page.screenshot(path=str(shots / "experiments.png"), full_page=True)
    page.goto(c.url + "/cluster")
    page.wait_for_selector("#agents-table tbody tr[data-key=agent-0]")
    assert "/3" in page.text_content("#agents-table tbody tr[data-key=agent-0]")
    page.screenshot(path=str(shots / "cluster.png"), full_page=True)
