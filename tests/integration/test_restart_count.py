"""A trial that keeps failing under `max_restarts: 2`: three runs, and it ends with `restarts = 2` everywhere.

Determined 0.38.1 (master/internal/trial.go) increments its failure count before comparing it with
max_restarts, so its column ends at 3, but every read of a trial (master/static/srv/proto_get_trials_plus.sql)
answers `LEAST(restarts, max_restarts)`: the API, CLI and web UI show 2. Stalwart stores the restarts made.
"""

from __future__ import annotations

import json

import pytest

from integration.helpers import create, logs, wait_state

pytestmark = pytest.mark.integration

CONFIG = """
name: keeps-failing
entrypoint: python3 fail.py
max_restarts: 2
searcher: {name: single, metric: loss, max_length: {batches: 1}}
"""


def test_max_restarts_2_gives_three_runs_and_restarts_2(cluster, tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "fail.py").write_text("import sys\nprint('RUNNING', flush=True)\nsys.exit(3)\n")
    c = cluster
    exp_id = create(c, CONFIG, ctx)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=90)
    assert d["experiment"]["state"] == "ERROR"
    [trial] = d["trials"]
    assert (trial["state"], trial["restarts"]) == ("ERROR", 2)
    assert "more than max_restarts (2)" in trial["error_message"]

    detail = c.client().get(f"/trials/{trial['id']}")
    assert detail["trial"]["restarts"] == 2
    assert [r["exit_code"] for r in detail["runs"]] == [3, 3, 3]

    lines = [e["log"] for e in logs(c, trial["id"])]
    assert sum("RUNNING" in line for line in lines) == 3
    assert [line for line in lines if "restarting from its latest checkpoint" in line and "(restart " in line] \
        == [line for line in lines if "(restart 1/2)" in line or "(restart 2/2)" in line]
    assert any("(restart 1/2)" in line for line in lines) and any("(restart 2/2)" in line for line in lines)
    assert not any("(restart 3/2)" in line for line in lines)

    described = json.loads(c.cli("t", "describe", str(trial["id"]), "--json", check=True).stdout)
    assert described["trial"]["restarts"] == 2
    ui = c.client().get(f"/ui/trials/{trial['id']}")
    assert ui["trial"]["restarts"] == 2
