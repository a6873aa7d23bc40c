"""A master restart and an eviction under Kubernetes (issue 31, acceptance 2), against this run's Kubernetes API
TEST DOUBLE (tests/k8s_server.py):

- the master is killed (SIGKILL) while a trial's pod runs, the API's watch history is compacted meanwhile (so the
  restarted master cannot resume an old watch), and the master is started again: it lists its pods by label and
  re-attaches the running one (the same pod, one run of the trial, no second pod), and the trial completes;
- the double evicts a trial's pod after its first checkpoint (as the kubelet under memory pressure): the run ends as
  a lost node's, and the trial resumes from its checkpoint in a new pod, not counted as a failure."""

from __future__ import annotations

import threading
import time

import pytest
from k8s_trials import IMAGE, failure_details, k8s_master, our_pods, running_pod

from integration.helpers import DIGITS, checkpoints, create, digits_config, first_trial, live_run, logs, wait_state

pytestmark = pytest.mark.integration


class PodWatcher:
    """Every pod name of the test's namespace seen while it runs."""

    def __init__(self, c) -> None:
        self.c, self.names, self._stop = c, set(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.names |= {p["metadata"]["name"] for p in our_pods(self.c)}

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _slow_digits() -> str:
    return digits_config(searcher__max_length={"batches": 60}, min_validation_period={"batches": 20},
                         hyperparameters__batch_sleep=0.1, environment={"image": IMAGE})


def test_a_master_killed_while_pods_run_re_attaches_them_by_label(k8s_space, tmp_path):
    with k8s_master(k8s_space, tmp_path) as c:
        exp_id = create(c, _slow_digits(), DIGITS)
        trial_id = first_trial(c, exp_id)
        pod = running_pod(c)
        c.wait_for(lambda: live_run(c, trial_id), timeout=60, what="the trial to run")
        watcher = PodWatcher(c)
        try:
            c.kill_master()
            k8s_space.api.expire_history()
            time.sleep(2.0)
            assert [p["metadata"]["name"] for p in our_pods(c)] == [pod["metadata"]["name"]]  # it outlived its master
            c.start_master()
            described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
        finally:
            watcher.stop()
        text = "\n".join(line["log"] for line in logs(c, trial_id))
        assert described["experiment"]["state"] == "COMPLETED", text[-3000:] + c.log("master.log")[-3000:]
        runs = c.client().get(f"/trials/{trial_id}")["runs"]
        assert len(runs) == 1 and described["trials"][0]["restarts"] == 0, runs  # re-attached: it never ran twice
        assert watcher.names == {pod["metadata"]["name"]}, watcher.names
        assert "resumed from checkpoint" not in text


def test_an_evicted_pod_is_a_preemption_that_resumes_from_the_checkpoint(k8s_space, tmp_path):
    with k8s_master(k8s_space, tmp_path) as c:
        config = digits_config(searcher__max_length={"batches": 60}, min_validation_period={"batches": 20},
                               hyperparameters__batch_sleep=0.1, environment={"image": IMAGE}, max_restarts=0)
        exp_id = create(c, config, DIGITS)
        trial_id = first_trial(c, exp_id)
        pod = running_pod(c)
        c.wait_for(lambda: checkpoints(c, trial_id), timeout=120, what="a first checkpoint")
        k8s_space.api.evict(k8s_space.namespace, pod["metadata"]["name"])
        described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
        assert described["experiment"]["state"] == "COMPLETED", failure_details(c, trial_id)
        assert described["trials"][0]["restarts"] == 0
        text = "\n".join(line["log"] for line in logs(c, trial_id))
        assert "resumed from checkpoint" in text and "Evicted" in text, text[-3000:]
        runs = c.client().get(f"/trials/{trial_id}")["runs"]
        assert len(runs) >= 2 and runs[0]["exit_reason"] in ("AGENT_LOST", "PREEMPTED"), runs
