"""The tasks page links a serving task to its server through the master's proxy, and Chromium, signed in by its
session cookie, reaches the server there without the master's cookies crossing (issue 32).

The task is a command whose entrypoint is `stalwart.harness.service` starting the recording service
(stalwart.testing.recording_service), whose `.../echo` answers with the request it received.
"""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.integration

SERVER = ["python3", "-m", "stalwart.harness.service", "--",
          "python3", "-m", "stalwart.testing.recording_service", "{port}"]


def test_the_tasks_page_opens_a_serving_task_through_the_proxy_without_the_masters_cookies(ui_cluster, page):
    c = ui_cluster
    made = c.cli("cmd", "run", "-d", "--config", "resources.slots=0", *SERVER, check=True)
    cmd_id = re.search(r"Launched command (\d+)", made.stdout).group(1)
    try:
        c.wait_for(lambda: "listens on port" in c.cli("cmd", "logs", cmd_id).stdout, timeout=120,
                   what="the task's server")
        page.goto(c.url + "/tasks")
        row = f'#tasks-table tr[data-key="{cmd_id}"]'
        link = page.wait_for_selector(f'{row} a[href="/proxy/command-{cmd_id}/"]', timeout=15_000)
        assert link.text_content() == "Open"
        heads = page.eval_on_selector_all("#tasks-table th", "ths => ths.map(th => th.textContent.trim())")
        cells = page.eval_on_selector_all(f"{row} td", "tds => tds.map(td => td.textContent.trim())")
        assert dict(zip(heads, cells, strict=True))["Kind"] == "command"

        answer = page.goto(f"{c.url}/proxy/command-{cmd_id}/echo")
        assert answer is not None and answer.status == 200
        seen = json.loads(page.text_content("body") or "{}")
        assert seen["path"] == f"/proxy/command-{cmd_id}/echo"
        assert "stalwart_session" not in seen["headers"].get("cookie", "")
        assert "stalwart_csrf" not in seen["headers"].get("cookie", "")
        assert seen["headers"]["authorization"].startswith("token ")
    finally:
        c.cli("cmd", "kill", cmd_id)
