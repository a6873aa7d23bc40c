"""The Kubernetes manager's pod informer (rm/kubernetes/informer.py) against this run's Kubernetes API TEST DOUBLE
(tests/k8s_server.py): it lists, then follows the watch; when the server compacts its history (the watch is
answered 410 Gone) it lists again, and its cache ends equal to the server's pods: no change made meanwhile is lost
(issue 31, acceptance 4)."""

from __future__ import annotations

import sys
import time

import pytest

from stalwart.config.kubernetes import KubernetesConfig
from stalwart.rm.kubernetes import KubeApi, PodInformer, RunPods, pods as manifests

pytestmark = pytest.mark.integration


def _run(space, n: int) -> RunPods:
    return RunPods(name=f"inf-{n}", namespace=space.namespace, prefix="inf-", allocation_id=f"a{n}", pool="default",
                   pods=1, slots_per_pod=1, slot_type="cpu", image="img", command=(sys.executable, "-c"),
                   master_url="http://unused", pod_spec=space.selector())


def _start(api: KubeApi, run: RunPods) -> None:
    api.create_secret(run.namespace, manifests.join_secret(run, "unused"))
    api.create_job(run.namespace, _sleeper(run))


def _sleeper(run: RunPods) -> dict:
    job = manifests.job(run, 0)
    job["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "exec sleep 600"]
    return job


def _settle(informer: PodInformer, space, count: int, timeout: float = 20) -> None:
    """Until the server has `count` pods, all Running, and the informer's cache holds exactly them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        truth = {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in space.pods()
                 if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")}
        mine = {n: p["metadata"]["resourceVersion"] for n, p in informer.snapshot().items()}
        if len(truth) == count == len(space.pods()) and mine == truth:
            return
        time.sleep(0.05)
    raise AssertionError(f"the informer's cache {sorted(mine)} never matched the server's {sorted(truth)}")


def test_a_watch_answered_410_is_listed_again_and_no_change_is_lost(k8s_space):
    k8s_space.add_node("n1", cpu=8)
    api = KubeApi(KubernetesConfig(kubeconfig=str(k8s_space.api.kubeconfig)))
    selector = f"{manifests.LABEL_PREFIX}=inf"
    changes: list[int] = []
    informer = PodInformer(api, k8s_space.namespace, selector, on_change=lambda: changes.append(1)).start()
    try:
        assert informer.wait_ready(10)
        for n in range(3):
            _start(api, _run(k8s_space, n))
        _settle(informer, k8s_space, 3)
        assert len(informer.snapshot()) == 3 and informer.relists == 0

        k8s_space.api.expire_history()  # the watch in progress is cut with 410 Gone; what follows needs a list
        api.delete_job(k8s_space.namespace, "inf-0-0", grace_s=0)
        for n in range(3, 5):
            _start(api, _run(k8s_space, n))
        _settle(informer, k8s_space, 4)
        assert informer.relists >= 1 and changes
        names = sorted(informer.snapshot())
        assert [n.rsplit("-", 1)[0] for n in names] == ["inf-1-0", "inf-2-0", "inf-3-0", "inf-4-0"], names
    finally:
        informer.stop()
        for n in range(5):
            api.delete_job(k8s_space.namespace, f"inf-{n}-0", grace_s=0)
        api.close()
