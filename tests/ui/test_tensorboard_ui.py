"""A TensorBoard through the master's proxy in Chromium (issue 32): two small finished experiments, one TensorBoard
of both (`stalwart tensorboard start E1 E2`), and its scalars dashboard shows both experiments' runs
(`exp-<id>/trial-<id>`) with a loss chart. The experiment page's "Open TensorBoard" button starts one for that
experiment and opens it.
"""

from __future__ import annotations

import re

import pytest

from tensorboard_runs import finished_experiments

pytestmark = pytest.mark.integration

DASHBOARD_MS = 60_000
"""TensorBoard's Angular app loads its plugins and data after the page: give it time on a busy machine."""


@pytest.fixture(scope="module")
def runs(ui_cluster) -> list[tuple[int, int]]:
    return finished_experiments(ui_cluster, 2, prefix="tb-ui")


def _served(c, tb_id: int) -> str:
    def path() -> str | None:
        return c.client().get(f"/tensorboards/{tb_id}")["tensorboard"].get("proxy_path")
    return c.wait_for(path, timeout=120, what=f"TensorBoard {tb_id} to serve")


def _shows_runs_with_a_chart(page, names: list[str]) -> None:
    """TensorBoard's default dashboard (Time Series: its scalars) lists `names` as runs and draws the loss."""
    page.wait_for_selector("scalar-card line-chart", timeout=DASHBOARD_MS)
    for name in names:
        page.locator("runs-table").get_by_text(name, exact=True).first.wait_for(timeout=DASHBOARD_MS)
    loss = page.locator("scalar-card", has_text="training/loss").first
    loss.wait_for(timeout=DASHBOARD_MS)
    box = loss.locator("line-chart").bounding_box()
    assert box is not None and box["width"] > 50 and box["height"] > 50, box


def test_the_scalars_dashboard_shows_both_experiments_runs_through_the_proxy(ui_cluster, page, runs) -> None:
    c = ui_cluster
    (e1, t1), (e2, t2) = runs
    made = c.cli("tensorboard", "start", "-d", str(e1), str(e2), check=True)
    tb_id = int(re.search(r"Launched TensorBoard (\d+)", made.stdout).group(1))
    try:
        path = _served(c, tb_id)
        assert path == f"/proxy/tensorboard-{tb_id}/"
        page.goto(c.url + path)
        _shows_runs_with_a_chart(page, [f"exp-{e1}/trial-{t1}", f"exp-{e2}/trial-{t2}"])
    finally:
        c.cli("tensorboard", "kill", str(tb_id))


def test_the_experiment_page_opens_a_tensorboard_of_it(ui_cluster, page, runs) -> None:
    c = ui_cluster
    (e1, t1), _ = runs
    page.goto(f"{c.url}/experiments/{e1}")
    page.click("#open-tensorboard")
    page.wait_for_url(re.compile(r".*/proxy/tensorboard-\d+/$"), timeout=120_000)
    tb_id = int(re.search(r"tensorboard-(\d+)", page.url).group(1))
    try:
        _shows_runs_with_a_chart(page, [f"exp-{e1}/trial-{t1}"])
        page.goto(f"{c.url}/experiments/{e1}")  # a second click opens the same one
        page.click("#open-tensorboard")
        page.wait_for_url(re.compile(r".*/proxy/tensorboard-\d+/$"), timeout=60_000)
        assert page.url.endswith(f"/proxy/tensorboard-{tb_id}/")
    finally:
        c.cli("tensorboard", "kill", str(tb_id))
