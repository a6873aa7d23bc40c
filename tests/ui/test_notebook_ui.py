"""A notebook in Chromium through the master's proxy (issue 32): started from the CLI, listed on the tasks page (also
when it shows only notebooks) with its Open link, opened by its owner signed in to the master's UI (the browser
holds no Jupyter token: the proxy passes the service token on), a new notebook document made from JupyterLab's
launcher, and a cell run on the kernel, whose WebSocket goes through the proxy too.
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.integration

CELL = "import torch; print(torch.arange(3) * 2)"
SLOW_MS = 180_000
"""JupyterLab's first load and a kernel importing torch take a while on a loaded 2-core machine."""


def test_a_notebook_runs_a_torch_cell_in_chromium_through_the_masters_proxy(ui_cluster, page):
    c = ui_cluster
    made = c.cli("notebook", "start", "-d", "--config", "resources.slots=0", check=True)
    nb_id = re.search(r"Launched notebook (\d+)", made.stdout).group(1)
    base = f"/proxy/notebook-{nb_id}/"
    try:
        c.wait_for(lambda: c.api_get(f"/api/v1/notebooks/{nb_id}").json()["notebook"].get("proxy_path"), timeout=180,
                   what="JupyterLab to serve")
        page.goto(c.url + "/tasks?kind=notebook")
        row = f'#tasks-table tr[data-key="{nb_id}"]'
        link = page.wait_for_selector(f'{row} a[href="{base}"]', timeout=15_000)
        assert link.text_content() == "Open"
        heads = page.eval_on_selector_all("#tasks-table th", "ths => ths.map(th => th.textContent.trim())")
        kinds = page.eval_on_selector_all(f"#tasks-table td:nth-child({heads.index('Kind') + 1})",
                                          "tds => tds.map(td => td.textContent.trim())")
        assert kinds and set(kinds) == {"notebook"}, kinds  # only notebooks shown
        assert page.input_value("#task-kind") == "notebook"

        page.goto(c.url + base + "lab", timeout=SLOW_MS)
        page.locator('.jp-LauncherCard[data-category="Notebook"]').first.click(timeout=SLOW_MS)
        editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content").first
        editor.wait_for(timeout=SLOW_MS)
        # the kernel answered over its WebSocket (through the proxy) once the status bar says it is idle
        page.wait_for_function("document.body.innerText.includes('(ipykernel) | Idle')", timeout=SLOW_MS)
        editor.click()
        page.keyboard.type(CELL)
        page.keyboard.press("Shift+Enter")
        output = page.locator(".jp-NotebookPanel .jp-OutputArea-output", has_text="tensor([0, 2, 4])")
        output.first.wait_for(timeout=SLOW_MS)
        assert "token=" not in page.url
    finally:
        c.cli("notebook", "kill", nb_id)
