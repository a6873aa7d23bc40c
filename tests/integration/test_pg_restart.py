"""A PostgreSQL restart while trials report: nothing acknowledged is lost, nothing runs twice, all completes.

The shared server at 127.0.0.1:5432 serves the other tests, so this one starts a throwaway PostgreSQL of
its own (Debian's binaries, run as the `postgres` user) that it can restart at will.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import pytest
import yaml

from integration.helpers import create, first_trial, wait_state
from integration.process_watch import DoubleRunWatcher, trial_processes
from stalwart.testing import LocalTestCluster, free_port

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

FAULTS = pathlib.Path(__file__).with_name("faults")


class ThrowawayPostgres:
    def __init__(self, root: pathlib.Path) -> None:
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        if not bins:
            pytest.fail("no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)")
        self.bin, self.root, self.port = pathlib.Path(bins[-1]), root, free_port()
        self.data = root / "data"

    def _as_postgres(self, *argv: str) -> None:
        cmd = [str(a) for a in argv]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stdout}{res.stderr}")

    def start(self) -> str:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._as_postgres(self.bin / "initdb", "-D", self.data, "--username=postgres", "--auth=trust",
                          "--encoding=UTF8", "--no-locale", "-N")
        self.pg_ctl("start")
        subprocess.run([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                        "stalwart"], check=True, capture_output=True, timeout=30)
        return f"postgresql://postgres@127.0.0.1:{self.port}/stalwart"

    def pg_ctl(self, action: str) -> None:
        self._as_postgres(self.bin / "pg_ctl", "-D", self.data, "-l", self.root / "server.log", "-w", "-t", "30",
                          "-m", "fast", "-o", f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                          "-c fsync=off", action)


@pytest.fixture
def throwaway_pg():
    # not under pytest's tmp_path: the `postgres` user cannot enter root's private temporary directories
    root = pathlib.Path(tempfile.mkdtemp(prefix="stalwart-pg-"))
    pg = ThrowawayPostgres(root)
    try:
        yield pg, pg.start()
    finally:
        with contextlib.suppress(RuntimeError):
            pg.pg_ctl("stop")
        shutil.rmtree(root, ignore_errors=True)


def test_a_postgres_restart_while_trials_report_loses_nothing_acknowledged(throwaway_pg, tmp_path):
    pg, url = throwaway_pg
    ledger = tmp_path / "ledger"
    marker = f"LEDGER={ledger}"
    config = yaml.safe_dump({
        "name": "pg-restart",
        "entrypoint": "python3 train.py",
        "hyperparameters": {"variant": {"type": "categorical", "vals": [1, 2]}},
        "searcher": {"name": "grid", "metric": "score", "smaller_is_better": False, "max_length": 50},
        "checkpoint_storage": {"save_trial_latest": 1000},
        "environment": {"environment_variables": [marker, "STEP_SECONDS=0.1"]},
    })
    with LocalTestCluster(tmp_path / "home", url, slots=2) as c:
        watcher = DoubleRunWatcher(marker)
        watcher.start()
        exp_id = create(c, config, FAULTS)
        first_trial(c, exp_id)
        c.wait_for(lambda: len(trial_processes(marker)) == 2, timeout=60, what="both trials to run")
        for _ in range(2):
            time.sleep(1.5)
            pg.pg_ctl("restart")  # every connection of the master's pool breaks
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=180)
        watcher.stop()
        assert d["experiment"]["state"] == "COMPLETED", d["experiment"].get("error_message")
        assert watcher.doubles == []
        client = c.client()
        for trial in d["trials"]:
            assert trial["state"] == "COMPLETED" and trial["restarts"] == 0
            steps = {m["steps_completed"] for m in client.get(f"/trials/{trial['id']}/metrics",
                                                              group="training")["metrics"]}
            assert steps == set(range(1, 51))
        stored = {ck["uuid"] for trial in d["trials"]
                  for ck in client.get(f"/trials/{trial['id']}/checkpoints")["checkpoints"]}
        acked = [line.split() for line in ledger.read_text().splitlines()]
        assert {a[3] for a in acked if a[0] == "checkpoint"} <= stored
        assert sum(a[0] == "metric" for a in acked) >= 100


FINISHES_WHILE_DOWN = ("import time\nfrom determined import core\n"
                       "with core.init() as ctx:\n    ctx.train.report_validation_metrics(1, {'x': 0.5})\n"
                       "time.sleep(3)\n")


def test_a_trial_that_exits_while_postgres_is_down_keeps_its_real_exit(throwaway_pg, tmp_path):
    # the agent's exit report meets a master whose database is gone (a 500): it must be retried, not dropped,
    # and the agent must outlive its failed registrations, or the exit would be read as a lost agent's
    pg, url = throwaway_pg
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text(FINISHES_WHILE_DOWN)
    with LocalTestCluster(tmp_path / "home", url) as c:
        exp_id = create(c, "entrypoint: python3 train.py\nsearcher: {name: single, metric: x, max_length: 1}\n", ctx)
        trial_id = first_trial(c, exp_id)
        c.wait_for(lambda: c.client().get(f"/trials/{trial_id}/metrics", group="validation")["metrics"],
                   what="the validation report")
        pg.pg_ctl("stop")
        try:
            c.wait_for(lambda: "exited with 0" in c.log("agent-0.log"), timeout=30, what="the trial to exit")
            time.sleep(3)  # the agent's exit report and polls meet the master without its database
            assert c.agents[0].poll() is None, c.log("agent-0.log")[-2000:]
        finally:
            pg.pg_ctl("start")
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=60)
        assert d["experiment"]["state"] == "COMPLETED", d["experiment"].get("error_message")
        runs = c.client().get(f"/trials/{trial_id}")["runs"]
        assert [(r["exit_reason"], r["exit_code"]) for r in runs] == [("COMPLETED", 0)]
