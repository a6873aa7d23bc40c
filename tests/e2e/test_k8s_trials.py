"""Trials as Kubernetes pods end to end (issue 31, acceptance 1): a real master whose resource manager is
Kubernetes, against this run's Kubernetes API TEST DOUBLE (tests/k8s_server.py), each test in its namespace on its
own nodes. Each pod runs the real pod agent, which runs the trial.

- the digits example completes as a pod with the image and `environment.pod_spec` asked for; a pause checkpoints
  and ends the pod, an activate makes a new one that resumes from the checkpoint;
- a 2-slot distributed trial (gloo DDP) with `max_slots_per_pod: 1` runs as two pods, one rank each, meeting at
  the rendezvous the master gave them;
- an 8-trial ASHA search completes through pods on a node with room for two at once."""

from __future__ import annotations

import pytest
import yaml
from k8s_trials import IMAGE, failure_details, k8s_master, our_pods, running_pod

from integration.helpers import (
    DIGITS,
    REPO,
    checkpoints,
    create,
    digits_config,
    experiment,
    first_trial,
    live_run,
    logs,
    wait_state,
)

pytestmark = pytest.mark.integration
DISTRIBUTED = REPO / "examples" / "distributed"
POD_SPEC = {"metadata": {"labels": {"team": "vision"}},
            "spec": {"serviceAccountName": "trainer", "tolerations": [{"key": "gpu", "operator": "Exists"}],
                     "volumes": [{"name": "scratch", "emptyDir": {}}],
                     "containers": [{"name": "determined-container",
                                     "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                                     "env": [{"name": "TEAM_NAME", "value": "vision"}]}]}}


def test_digits_runs_as_a_pod_with_its_image_and_pod_spec_and_pause_activate_resumes(k8s_space, tmp_path):
    with k8s_master(k8s_space, tmp_path) as c:
        config = digits_config(searcher__max_length={"batches": 60}, min_validation_period={"batches": 20},
                               hyperparameters__batch_sleep=0.1, environment={"image": IMAGE, "pod_spec": POD_SPEC})
        exp_id = create(c, config, DIGITS)
        trial_id = first_trial(c, exp_id)
        pod = running_pod(c)
        task = pod["spec"]["containers"][0]
        assert task["image"] == IMAGE and pod["metadata"]["labels"]["team"] == "vision"
        assert pod["spec"]["serviceAccountName"] == "trainer" and pod["spec"]["volumes"][0]["name"] == "scratch"
        assert {"name": "TEAM_NAME", "value": "vision"} in task["env"]
        assert not any("value" in e and e["name"] == "STALWART_JOIN_TOKEN" for e in task["env"])
        c.wait_for(lambda: checkpoints(c, trial_id), timeout=120, what="a first checkpoint")
        c.client().experiment_action(exp_id, "pause")
        c.wait_for(lambda: experiment(c, exp_id)["trials"][0]["state"] == "PAUSED" and live_run(c, trial_id) is None,
                   timeout=120, what="the trial to stop")
        c.wait_for(lambda: not our_pods(c), timeout=60, what="the paused trial's pod to be deleted")
        paused_at = max(ck["steps_completed"] for ck in checkpoints(c, trial_id))

        c.client().experiment_action(exp_id, "activate")
        second = running_pod(c)
        assert second["metadata"]["name"] != pod["metadata"]["name"]
        described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
        assert described["experiment"]["state"] == "COMPLETED", failure_details(c, trial_id)
        resumed = [line["log"] for line in logs(c, trial_id) if "resumed from checkpoint" in line["log"]]
        assert len(resumed) == 1 and f"steps_completed={paused_at}" in resumed[0], resumed
        assert described["trials"][0]["restarts"] == 0
        c.wait_for(lambda: not our_pods(c), timeout=60, what="the finished trial's pod to be deleted")


def test_a_two_pod_distributed_trial_meets_at_its_rendezvous_and_completes(k8s_space, tmp_path):
    with k8s_master(k8s_space, tmp_path, nodes=2, cpus=1, max_slots_per_pod=1) as c:
        cfg = yaml.safe_load((DISTRIBUTED / "distributed.yaml").read_text())
        cfg["searcher"]["max_length"] = {"batches": 20}
        cfg["environment"] = {"image": IMAGE}
        exp_id = create(c, yaml.safe_dump(cfg), DISTRIBUTED)
        trial_id = first_trial(c, exp_id)
        pods = c.wait_for(lambda: len(running := our_pods(c, "Running")) == 2 and running, timeout=60,
                          what="both pods to run")
        assert {p["spec"]["nodeName"] for p in pods} == set(k8s_space.nodes)  # one CPU each: one pod a node
        described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
        assert described["experiment"]["state"] == "COMPLETED", failure_details(c, trial_id)
        ranks = {line.get("rank_id") for line in logs(c, trial_id) if line.get("rank_id") is not None}
        assert ranks >= {0, 1}, ranks
        run = c.client().get(f"/trials/{trial_id}")["runs"][0]
        assert run["agent_id"].endswith("-0")  # the chief: rank 0's pod


ASHA = {"name": "adaptive_asha", "metric": "validation_accuracy", "smaller_is_better": False, "max_trials": 8,
        "max_concurrent_trials": 2, "time_metric": "batches", "max_time": 20, "max_rungs": 2, "mode": "aggressive"}


def test_an_asha_search_of_eight_trials_completes_as_pods(k8s_space, tmp_path):
    with k8s_master(k8s_space, tmp_path, nodes=1, cpus=2) as c:
        cfg = yaml.safe_load(digits_config(min_validation_period={"batches": 10}, environment={"image": IMAGE}))
        cfg["searcher"] = ASHA
        cfg["hyperparameters"]["learning_rate"] = {"type": "log", "minval": -3.0, "maxval": -0.5}
        exp_id = create(c, yaml.safe_dump(cfg), DIGITS)
        described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=400)
        assert described["experiment"]["state"] == "COMPLETED", c.log("master.log")[-3000:]
        trials = described["trials"]
        failed = [t["id"] for t in trials if t["state"] != "COMPLETED"]
        assert len(trials) == 8 and not failed, failure_details(c, failed[0]) if failed else len(trials)
        c.wait_for(lambda: not our_pods(c), timeout=60, what="every pod of the search to be deleted")
