"""A custom searcher (Determined 0.37's API) run by the master in its own process, end to end."""

from __future__ import annotations

import os
import pathlib
import time

import pytest
import yaml

from integration.helpers import REPO, create, experiment, metrics, wait_state
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

CORE_API = REPO / "examples" / "determined" / "core_api"


def _config(**searcher) -> str:
    cfg = yaml.safe_load((CORE_API / "custom_search.yaml").read_text())
    cfg["searcher"].update(searcher)
    return yaml.safe_dump(cfg)


def _worker_pids(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = pathlib.Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if b"stalwart.harness.searcher_worker" in cmd and ppid == parent:
            found.append(int(entry))
    return found


def _trained(c, trial_id: int) -> int:
    return max((m["steps_completed"] for m in metrics(c, trial_id, "validation")), default=0)


@pytest.fixture
def two_slots(tmp_path):
    with LocalTestCluster(tmp_path / "home", slots=2) as c:
        yield c


def _check_successive_doubling(c, exp_id: int) -> None:
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=400)
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
    trials = d["trials"]
    assert sorted(t["hparams"]["learning_rate"] for t in trials) == [0.002, 0.02, 0.05, 0.1]
    assert all(t["state"] == "COMPLETED" for t in trials)
    # 4 candidates at 50 batches, the best 2 continue to 100, the best of those to 200.
    assert sorted(_trained(c, t["id"]) for t in trials) == [50, 50, 100, 200]
    assert d["experiment"]["progress"] == pytest.approx(1.0)


def test_custom_search_method_runs_in_its_own_process_and_drives_the_trials(two_slots):
    c = two_slots
    exp_id = create(c, _config(), CORE_API)
    workers = c.wait_for(lambda: _worker_pids(c.master.pid), what="the searcher worker process")
    assert workers and workers[0] != c.master.pid
    _check_successive_doubling(c, exp_id)
    c.wait_for(lambda: not _worker_pids(c.master.pid), timeout=30, what="the worker to end with the experiment")


def test_master_restart_mid_custom_search_continues_from_the_snapshot(two_slots):
    c = two_slots
    exp_id = create(c, _config(), CORE_API)
    c.wait_for(lambda: sum(1 for t in experiment(c, exp_id)["trials"] if t["latest_validation"]) >= 2,
               timeout=200, what="two candidates to report their first validation")
    c.kill_master()
    time.sleep(1.0)
    c.start_master()
    _check_successive_doubling(c, exp_id)


def test_search_method_that_cannot_be_loaded_is_refused_at_create(two_slots):
    c = two_slots
    before = len(c.client().get("/experiments")["experiments"])
    for spec, expected in [("nosuchmodule:Search", "No module named 'nosuchmodule'"),
                           ("search:NoSuchClass", "has no attribute 'NoSuchClass'"),
                           ("search", "expected 'module:Class'")]:
        (c.home / "cfg.yaml").write_text(_config(search_method=spec))
        res = c.cli("experiment", "create", str(c.home / "cfg.yaml"), str(CORE_API))
        assert res.returncode == 2, res.stdout + res.stderr
        assert "searcher.search_method" in res.stderr and expected in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
    assert len(c.client().get("/experiments")["experiments"]) == before


def test_search_method_that_raises_ends_the_experiment_with_its_error(two_slots, tmp_path):
    c = two_slots
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "train.py").write_text((CORE_API / "train.py").read_text())
    (context / "search.py").write_text((CORE_API / "search.py").read_text() + (
        "\n\nclass Broken(SuccessiveDoubling):\n"
        "    def on_validation_completed(self, searcher_state, request_id, metric, train_length):\n"
        "        raise ValueError('my searcher has a bug')\n"))
    exp_id = create(c, _config(search_method="search:Broken"), context)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=300)
    assert d["experiment"]["state"] == "ERROR"
    message = d["experiment"]["error_message"]
    assert "custom searcher search:Broken" in message and "ValueError: my searcher has a bug" in message, message
    c.wait_for(lambda: not _worker_pids(c.master.pid), timeout=30, what="the worker to end with the experiment")
