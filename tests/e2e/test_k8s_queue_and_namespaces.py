"""The Kubernetes manager's queue and namespaces (issue 31), against this run's Kubernetes API TEST DOUBLE
(tests/k8s_server.py):

- a trial whose pod Kubernetes cannot place (another tenant's pod holds the node) waits with the scheduler's own
  reason in `job list`, and runs once the node is free;
- a workspace bound to a namespace (admins only: `--kubernetes-namespace`) has its pods there;
- work that could never run as pods is refused at create: no image; slots that do not split into pods."""

from __future__ import annotations

import httpx
import pytest
from k8s_trials import IMAGE, k8s_master, running_pod

from helpers_auth import as_user
from integration.helpers import DIGITS, create, digits_config, first_trial, wait_state
from stalwart.api.errors import ConfigError, InvalidRequest

pytestmark = pytest.mark.integration
HOG = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other-tenant"},
       "spec": {"containers": [{"name": "hog", "image": "busybox", "command": ["sh", "-c", "exec sleep 600"],
                                "resources": {"requests": {"cpu": "4"}}}]}}


def _job_reason(c, exp_id: int) -> str | None:
    """What `job list` shows as the experiment's reason to wait."""
    return next((j.reason for j in c.client().list_jobs().jobs if j.entity_id == exp_id), None)


def test_a_pod_kubernetes_cannot_place_waits_with_its_reason_then_runs(k8s_space, tmp_path):
    with k8s_master(k8s_space, tmp_path) as c:
        hog = {**HOG, "spec": {**HOG["spec"], "nodeSelector": k8s_space.selector()["spec"]["nodeSelector"]}}
        with httpx.Client(base_url=k8s_space.api.url, headers={"authorization": f"Bearer {k8s_space.api.token}"}) as k:
            assert k.post(f"/api/v1/namespaces/{k8s_space.namespace}-hog/pods", json=hog).status_code == 201
            try:
                exp_id = create(c, digits_config(environment={"image": IMAGE}), DIGITS)
                reason = c.wait_for(lambda: (r := _job_reason(c, exp_id)) and "Insufficient cpu" in r and r,
                                    timeout=60, what="the pod's Unschedulable reason in the job queue")
                assert reason.startswith("pod ") and "0/" in reason, reason
            finally:
                k.delete(f"/api/v1/namespaces/{k8s_space.namespace}-hog/pods/other-tenant",
                         params={"gracePeriodSeconds": "0"})
        running_pod(c)
        described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
        assert described["experiment"]["state"] == "COMPLETED", c.log("master.log")[-3000:]


def test_a_workspace_bound_to_a_namespace_has_its_pods_there_and_only_admins_bind(k8s_space, tmp_path):
    with k8s_master(k8s_space, tmp_path) as c:
        bound = f"{k8s_space.namespace}-team"
        with httpx.Client(base_url=c.url, timeout=30) as http:
            as_user(http)
            assert http.post("/api/v1/users", json={"username": "pat", "password": "pw-Pat-123"}).status_code == 200
            made = http.post("/api/v1/workspaces", json={"name": "vision", "kubernetesNamespace": bound})
            assert made.status_code == 200, made.text
            ws = made.json()["workspace"]
            assert ws["kubernetesNamespace"] == bound
            assert http.post(f"/api/v1/workspaces/{ws['id']}/projects", json={"name": "p"}).status_code == 200
            bad = http.patch(f"/api/v1/workspaces/{ws['id']}", json={"kubernetesNamespace": "Not_A_Namespace"})
            assert bad.status_code == 400, bad.text
        with httpx.Client(base_url=c.url, timeout=30) as pat:
            as_user(pat, "pat", "pw-Pat-123")
            refused = pat.post("/api/v1/workspaces", json={"name": "mine", "kubernetesNamespace": "kube-system"})
            assert refused.status_code == 403, refused.text
        exp_id = create(c, digits_config(environment={"image": IMAGE}, workspace="vision", project="p"), DIGITS)
        pod = c.wait_for(lambda: next(iter(k8s_space.api.pods(bound)), None), timeout=60,
                         what="the workspace's pod in its namespace")
        assert pod["metadata"]["namespace"] == bound and not k8s_space.pods()
        first_trial(c, exp_id)
        c.client().experiment_action(exp_id, "kill")
        c.wait_for(lambda: not k8s_space.api.pods(bound), timeout=60, what="the killed trial's pod to be deleted")


@pytest.mark.parametrize(("change", "message"), [
    ({}, "Kubernetes runs every task in an image, and this one names none: set environment.image"),
    ({"environment": {"image": IMAGE}, "resources": {"slots_per_trial": 3}},
     "3 slots do not split evenly into pods of at most 2 (max_slots_per_pod)"),
])
def test_work_that_could_never_run_as_pods_is_refused_at_create(k8s_space, tmp_path, change, message):
    with k8s_master(k8s_space, tmp_path, max_slots_per_pod=2) as c:
        with pytest.raises((ConfigError, InvalidRequest)) as err:
            create(c, digits_config(**change), DIGITS)
        assert message in str(err.value) and "runs its work as Kubernetes pods" in str(err.value), str(err.value)
