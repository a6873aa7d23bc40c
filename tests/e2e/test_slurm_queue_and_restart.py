"""Slurm's queue and a master restart (issue 30, acceptance 2's search and acceptance 3), on this run's real Slurm
(tests/slurm_server.py, partitions `queue`, 4 CPUs on two nodes, and `restart`) with no agent of the master's own:

- an ASHA search of 8 one-slot trials goes through Slurm's queue with `max_concurrent_trials: 2` respected: never
  more than two training runs at once, one job per run, every trial ending;
- the master is killed (SIGKILL) while a trial's job runs and started again: it re-attaches the job (the same job
  id, one run of the trial, no second job), and the trial completes."""

from __future__ import annotations

import threading
import time

import pytest
import yaml
from slurm_trials import failure_details, our_jobs, running_job, slurm_master

from integration.helpers import DIGITS, create, digits_config, experiment, first_trial, live_run, logs, wait_state

pytestmark = pytest.mark.integration


@pytest.fixture
def c(slurm_cluster, tmp_path, monkeypatch, request):
    own = "queue" if "asha" in request.function.__name__ else "restart"  # its own: none waits for another's
    with slurm_master(slurm_cluster, tmp_path, monkeypatch, own) as cluster:
        yield cluster

ASHA = {"name": "adaptive_asha", "metric": "validation_accuracy", "smaller_is_better": False, "max_trials": 8,
        "max_concurrent_trials": 2, "time_metric": "batches", "max_time": 40, "max_rungs": 2, "mode": "aggressive"}


class JobWatcher:
    """Samples, while a test runs, this master's jobs in Slurm's queue (every id seen, the most RUNNING at once) and,
    given an experiment, its training runs: live runs the searcher has not asked to stop (a stopped trial's run
    checkpoints and exits while its replacement is already queued, as in Determined)."""

    def __init__(self, c, exp_id: int | None = None) -> None:
        self.c, self.exp_id, self.most_running, self.most_training, self.ids = c, exp_id, 0, 0, set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            jobs = our_jobs(self.c)
            self.most_running = max(self.most_running, sum(j["state"] == "RUNNING" for j in jobs))
            self.ids |= {j["job_id"] for j in jobs}
            if self.exp_id is not None:
                self.most_training = max(self.most_training, self._training())

    def _training(self) -> int:
        trials = [t for t in experiment(self.c, self.exp_id)["trials"] if t["state"] == "ACTIVE"]
        runs = [r for t in trials for r in self.c.client().get(f"/trials/{t['id']}")["runs"]]
        return sum(r["state"] != "TERMINATED" and not r["preempt_requested"] for r in runs)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def test_an_asha_search_runs_through_slurms_queue_within_max_concurrent_trials(c):
    cfg = yaml.safe_load(digits_config(min_validation_period={"batches": 10}, resources={"resource_pool": c.partition}))
    cfg["searcher"] = ASHA
    cfg["hyperparameters"]["learning_rate"] = {"type": "log", "minval": -3.0, "maxval": -0.5}
    exp_id = create(c, yaml.safe_dump(cfg), DIGITS)
    watcher = JobWatcher(c, exp_id)
    try:
        described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=400)
    finally:
        watcher.stop()
    assert described["experiment"]["state"] == "COMPLETED", c.log("master.log")[-3000:]
    trials = described["trials"]
    failed = [t["id"] for t in trials if t["state"] != "COMPLETED"]
    assert len(trials) == 8 and not failed, failure_details(c, failed[0]) if failed else len(trials)
    assert 1 <= watcher.most_training <= 2, watcher.most_training
    runs = [r for t in trials for r in c.client().get(f"/trials/{t['id']}")["runs"]]
    assert watcher.most_running >= 1 and len(watcher.ids) <= len(runs)  # one job per run (a short one may be missed)


def test_a_master_killed_while_slurm_jobs_run_re_attaches_them(c):
    config = digits_config(searcher__max_length={"batches": 60}, min_validation_period={"batches": 20},
                           hyperparameters__batch_sleep=0.1, resources={"resource_pool": c.partition})
    exp_id = create(c, config, DIGITS)
    trial_id = first_trial(c, exp_id)
    job = running_job(c)
    c.wait_for(lambda: live_run(c, trial_id), timeout=60, what="the trial to run")
    watcher = JobWatcher(c)
    try:
        c.kill_master()
        time.sleep(2.0)
        assert [j["job_id"] for j in our_jobs(c)] == [job["job_id"]]  # the job outlived its master
        c.start_master()
        described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    finally:
        watcher.stop()
    text = "\n".join(line["log"] for line in logs(c, trial_id))
    assert described["experiment"]["state"] == "COMPLETED", text[-3000:] + c.log("master.log")[-3000:]
    runs = c.client().get(f"/trials/{trial_id}")["runs"]
    assert len(runs) == 1 and described["trials"][0]["restarts"] == 0, runs  # re-attached: it never ran twice
    assert watcher.ids == {job["job_id"]}, watcher.ids
    assert "resumed from checkpoint" not in text
