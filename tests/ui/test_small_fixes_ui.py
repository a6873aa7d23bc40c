"""Smaller things of issue 26 in Chromium at 1400x900: the experiment list shows every column (Started and Ended
included) and wraps names between words, never inside one; a trial's log shows each line's level once; the run the
searcher stopped at the end of the search is labelled COMPLETED, not PREEMPTED.

With STALWART_UI_SCREENSHOTS=1 the screenshots are written to docs/ui (experiments-1400.png, trial-levels.png)."""

from __future__ import annotations

import base64

import pytest
import yaml

from stalwart.context import pack_context

pytestmark = pytest.mark.integration

LABEL = "issue-26-list"
# logs with Determined's LOG_FORMAT (the level first), reports a validation at its length, then goes on until asked
# to stop: ASHA stops a trial that reached its top rung, as it stops the best trial of a real search
STOPS_WHEN_ASKED = """
import logging, time
from stalwart import core

logging.basicConfig(level=logging.INFO, format="%(levelname)s: [%(process)s] %(name)s: %(message)s")
with core.init() as ctx:
    ctx.train.report_training_metrics(10, {"loss": 0.5})
    ctx.train.report_validation_metrics(10, {"validation_accuracy_top1": 0.9731})
    logging.info("reported the validation")
    logging.warning("the data loader is slow")
    for _ in range(900):
        if ctx.preempt.should_preempt():
            break
        time.sleep(0.2)
    logging.info("stopping: asked to")
"""
NAMES = ["resnet50-imagenet-baseline-cosine-warmup-label-smoothing-v2",
         "bert finetune on squad v2 with a long descriptive name that has spaces",
         "transformer_xl_wikitext103_adaptive_softmax_sweep"]

# Where a line of a name's text breaks, the character before the break: a space, or _ - . / : (the page puts a
# <wbr> after each); any other means a word was broken inside. Also how many names take more than one line.
NAME_BREAKS = """(sel) => {
  const bad = []; let wrapped = 0;
  for (const a of document.querySelectorAll(sel)) {
    const chars = [];
    const walk = document.createTreeWalker(a, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (let i = 0; i < n.length; i++) {
        const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
        const box = r.getClientRects()[0];
        chars.push([n.data[i], box ? Math.round(box.top) : null]);
      }
    }
    let top = null, lines = 1;
    chars.forEach(([c, t], i) => {
      if (t === null) return;
      if (top !== null && t > top + 2) {
        lines++;
        if (!/[\\s_\\-./:]/.test(chars[i - 1][0])) bad.push(`${a.textContent} (at ${i})`);
      }
      top = t;
    });
    if (lines > 1) wrapped++;
  }
  return { bad, wrapped };
}"""
# every header cell's right edge, the page's width, and whether the table scrolls sideways in its box
FITS = """() => {
  const wrap = document.querySelector('#experiments-table');  // the table's box (.table-wrap)
  return { page: document.documentElement.clientWidth,
           cells: [...document.querySelectorAll('#experiments thead th')].map(th => [th.textContent.trim(),
                   Math.ceil(th.getBoundingClientRect().right)]),
           box: Math.floor(wrap.getBoundingClientRect().right), scrolls: wrap.scrollWidth > wrap.clientWidth };
}"""


def _create(cluster, tmp_path, name: str, script: str, activate: bool, **config) -> int:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text(script)
    cfg = {"name": name, "entrypoint": "python3 train.py", "labels": [LABEL, "baseline", "sweep-2026-11"],
           "searcher": {"name": "single", "metric": "validation_accuracy_top1", "smaller_is_better": False,
                        "max_length": {"batches": 10}}, **config}
    reply = cluster.client().post("/experiments", {"config": yaml.safe_dump(cfg), "activate": activate,
                                                   "context": base64.b64encode(pack_context(ctx).data).decode()})
    return reply["experiment"]["id"]


@pytest.fixture(scope="module")
def finished(ui_cluster, tmp_path_factory) -> dict:
    """A search that ended (its best trial stopped when asked), and three more with long names: one killed."""
    c = ui_cluster
    tmp = tmp_path_factory.mktemp("small-fixes")
    asha = {"name": "adaptive_asha", "metric": "validation_accuracy_top1", "smaller_is_better": False,
            "max_length": {"batches": 10}, "max_trials": 1}
    exp_id = _create(c, tmp, "digits_mlp_asha_run_with_cosine_schedule", STOPS_WHEN_ASKED, activate=True,
                     searcher=asha)
    others = [_create(c, tmp, name, "print('never runs')\n", activate=False) for name in NAMES]
    c.client().post(f"/experiments/{others[0]}/kill", {})
    c.wait_for(lambda: c.client().get(f"/experiments/{exp_id}")["experiment"]["state"] in ("COMPLETED", "ERROR"),
               timeout=180, what="the search to end")
    detail = c.client().get(f"/experiments/{exp_id}")
    assert detail["experiment"]["state"] == "COMPLETED", detail["experiment"].get("error_message")
    return {"exp_id": exp_id, "trial_id": detail["trials"][0]["id"]}


def test_the_experiment_list_fits_1400_px_and_wraps_names_between_words(ui_cluster, page, shots, finished):
    c = ui_cluster
    page.goto(f"{c.url}/?label={LABEL}")
    page.wait_for_function("() => document.querySelectorAll('#experiments tbody tr[data-key]').length === 4")
    page.wait_for_function("() => document.querySelector('#experiments tbody').textContent"
                           ".includes('validation_accuracy_top1')", timeout=30_000)  # the best metric, once indexed
    page.screenshot(path=str(shots / "experiments-1400.png"), full_page=True)  # first: a failure leaves it to see
    fits = page.evaluate(FITS)
    assert fits["page"] == 1400
    headers = [name for name, _ in fits["cells"] if name]
    assert "Started" in headers and "Ended" in headers, headers
    assert all(right <= fits["box"] for _, right in fits["cells"]), fits  # every column on the page
    assert not fits["scrolls"], fits
    breaks = page.evaluate(NAME_BREAKS, "#experiments a.name")
    assert breaks["bad"] == [], breaks  # no name broken inside a word
    assert breaks["wrapped"] >= 1, "no name is long enough to wrap: the check above checked nothing"
    titles = page.eval_on_selector_all("#experiments a.name", "as => as.map(a => a.title)")
    assert set(NAMES) <= set(titles)  # the whole name, for one cut short
    cells = page.eval_on_selector_all(f"#experiments tbody tr[data-key='{finished['exp_id']}'] td",
                                      "tds => tds.map(td => td.textContent.trim())")
    row = dict(zip([name for name, _ in fits["cells"]], cells, strict=True))
    assert row["Started"][:2] == row["Ended"][:2] == "20", row  # both times shown


def test_a_trial_shows_each_log_level_once_and_its_stopped_run_completed(ui_cluster, page, shots, finished):
    c = ui_cluster
    page.goto(f"{c.url}/trials/{finished['trial_id']}")
    page.wait_for_function("() => [...document.querySelectorAll('#logs-panel .line .msg')]"
                           ".some(m => m.textContent.includes('stopping: asked to'))", timeout=30_000)
    page.screenshot(path=str(shots / "trial-levels.png"), full_page=True)
    lines = page.eval_on_selector_all(
        "#logs-panel .line", "ls => ls.filter(l => l.querySelector('.lvl')).map(l => "
        "[l.querySelector('.lvl').textContent, l.querySelector('.msg').textContent])")
    by_text = {msg.split(": ", 1)[-1]: (level, msg) for level, msg in lines}
    assert by_text["reported the validation"][0] == "INFO"
    assert by_text["the data loader is slow"][0] == "WARNING"
    doubled = [(level, msg) for level, msg in lines if msg.upper().startswith((level + ":", level + " "))]
    assert doubled == [], doubled  # the level column says it; the message does not say it again
    assert by_text["reported the validation"][1].startswith("[")  # "[pid] root: ...", as logged after the level
    runs = page.text_content("#runs-table tbody")
    assert "COMPLETED" in runs and "PREEMPTED" not in runs, runs
    api_runs = c.client().get(f"/trials/{finished['trial_id']}")["runs"]
    assert [r["exit_reason"] for r in api_runs] == ["COMPLETED"]
