"""The Kubernetes API test double's scheduler and "kubelet", through the official `kubernetes` client: pods wait
Unschedulable until resources free, secrets reach the process but not the pod object, deletion and eviction
signal the real process, and a pod without a command fails clearly."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest
from kubernetes.client.rest import ApiException

from k8s_double_bodies import python_pod

SIGTERM_HANDLER = """
import pathlib, signal, sys, time
def stop(signum, frame):
    pathlib.Path('got-sigterm').write_text(str(signum))
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print('handler ready', flush=True)
time.sleep(60)
"""


def gpu_pod(name: str, code: str) -> dict:
    pod = python_pod(name, code)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}, "requests": {"cpu": "500m"}}
    return pod


def log_has(core, name: str, namespace: str, text: str) -> bool:
    """Whether the pod's log holds `text` yet (a pod whose container has not started answers 400)."""
    try:
        return text in core.read_namespaced_pod_log(name, namespace)
    except ApiException as error:
        if error.status != 400:
            raise
        return False


def phase(core, name: str, namespace: str) -> str:
    return core.read_namespaced_pod(name, namespace).status.phase


def test_an_unschedulable_pod_says_why_and_runs_once_another_ends(core, wait_for, tmp_path) -> None:
    release = tmp_path / "release"
    holder = f"import pathlib, time\nwhile not pathlib.Path({str(release)!r}).exists(): time.sleep(0.05)"
    core.create_namespaced_pod("sched", gpu_pod("holder", holder))
    wait_for(lambda: phase(core, "holder", "sched") == "Running", "the first GPU pod running")
    assert core.read_namespaced_pod("holder", "sched").spec.node_name == "node-gpu"

    core.create_namespaced_pod("sched", gpu_pod("waiter", "print('got the gpu')"))

    def unschedulable():
        conditions = core.read_namespaced_pod("waiter", "sched").status.conditions or []
        return next((c for c in conditions if c.type == "PodScheduled" and c.status == "False"), None)

    condition = wait_for(unschedulable, "the Unschedulable condition")
    assert condition.reason == "Unschedulable"
    assert condition.message.startswith("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    assert phase(core, "waiter", "sched") == "Pending"

    release.touch()
    wait_for(lambda: phase(core, "waiter", "sched") == "Succeeded", "the waiting pod to run")
    assert core.read_namespaced_pod_log("waiter", "sched") == "got the gpu\n"


def test_node_selectors_and_taints_decide_the_node(core, wait_for) -> None:
    selected = python_pod("selected", "pass", nodeSelector={"accelerator": "a100"})
    core.create_namespaced_pod("sched", selected)
    wait_for(lambda: core.read_namespaced_pod("selected", "sched").spec.node_name, "a node")
    assert core.read_namespaced_pod("selected", "sched").spec.node_name == "node-gpu"

    core.create_namespaced_pod("sched", python_pod("nowhere", "pass", nodeSelector={"accelerator": "tpu"}))

    def message():
        conditions = core.read_namespaced_pod("nowhere", "sched").status.conditions or []
        return next((c.message for c in conditions if c.reason == "Unschedulable"), None)

    assert "2 node(s) didn't match Pod's node affinity/selector" in wait_for(message, "the selector message")


def test_secret_values_reach_the_process_but_not_the_pod_object(core, api_client, wait_for) -> None:
    core.create_namespaced_secret("secrets", {"metadata": {"name": "creds"}, "stringData": {"token": "s3cr3t-xyz"}})
    pod = python_pod("reader", "import os; print(os.environ['TOKEN'], os.environ['MY_NAME'], os.environ['HOSTNAME'])")
    pod["spec"]["containers"][0]["env"] = [
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
        {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    core.create_namespaced_pod("secrets", pod)

    wait_for(lambda: phase(core, "reader", "secrets") == "Succeeded", "the secret reader")
    assert core.read_namespaced_pod_log("reader", "secrets") == "s3cr3t-xyz reader reader\n"
    served = api_client.sanitize_for_serialization(core.read_namespaced_pod("reader", "secrets"))
    assert "s3cr3t-xyz" not in json.dumps(served)


def test_a_missing_secret_keeps_the_pod_waiting_with_create_container_config_error(core, wait_for) -> None:
    pod = python_pod("orphan-env", "pass")
    pod["spec"]["containers"][0]["env"] = [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k"}}}]
    core.create_namespaced_pod("secrets", pod)

    def waiting():
        statuses = core.read_namespaced_pod("orphan-env", "secrets").status.container_statuses or []
        return statuses and statuses[0].state.waiting

    state = wait_for(waiting, "the waiting container")
    assert (state.reason, state.message) == ("CreateContainerConfigError", 'secret "gone" not found')
    assert phase(core, "orphan-env", "secrets") == "Pending"
    with pytest.raises(ApiException) as not_started:
        core.read_namespaced_pod_log("orphan-env", "secrets")
    assert not_started.value.status == 400


def test_deleting_a_pod_sends_sigterm_then_removes_it(core, wait_for, tmp_path) -> None:
    pod = python_pod("graceful", SIGTERM_HANDLER)
    pod["spec"]["containers"][0]["workingDir"] = str(tmp_path)
    core.create_namespaced_pod("signals", pod)
    wait_for(lambda: log_has(core, "graceful", "signals", "handler ready"), "the handler")

    answered = core.delete_namespaced_pod("graceful", "signals", grace_period_seconds=5)
    assert answered.metadata.deletion_timestamp is not None

    def removed() -> bool:
        try:
            core.read_namespaced_pod("graceful", "signals")
        except ApiException as error:
            return error.status == 404
        return False

    wait_for(removed, "the pod removed")
    assert (tmp_path / "got-sigterm").read_text() == "15"


def test_eviction_fails_the_pod_with_reason_evicted(core, kube_double, wait_for, tmp_path) -> None:
    pod = python_pod("evictee", SIGTERM_HANDLER)
    pod["spec"]["containers"][0]["workingDir"] = str(tmp_path)
    core.create_namespaced_pod("signals", pod)
    wait_for(lambda: log_has(core, "evictee", "signals", "handler ready"), "the handler")

    kube_double.evict("signals", "evictee", message="The node was low on resource: memory.")

    evicted = wait_for(lambda: (p := core.read_namespaced_pod("evictee", "signals")).status.phase == "Failed" and p, "")
    assert (evicted.status.reason, evicted.status.message) == ("Evicted", "The node was low on resource: memory.")
    assert (tmp_path / "got-sigterm").exists()
    assert [p["metadata"]["name"] for p in kube_double.pods("signals")] == ["evictee"]


def test_a_pod_without_a_command_fails_with_a_clear_message(core, wait_for) -> None:
    pod = python_pod("imageonly", "pass")
    del pod["spec"]["containers"][0]["command"]
    core.create_namespaced_pod("commands", pod)

    wait_for(lambda: phase(core, "imageonly", "commands") == "Failed", "the pod to fail")
    terminated = core.read_namespaced_pod("imageonly", "commands").status.container_statuses[0].state.terminated
    assert terminated.reason == "StartError"
    assert "does not pull or run images" in terminated.message


def test_args_expand_environment_references_and_extra_env_is_set(core, wait_for) -> None:
    pod = python_pod("expander", "")
    container = pod["spec"]["containers"][0]
    container["command"] = [sys.executable, "-c", "import os, sys; print(sys.argv[1], os.environ['K8S_DOUBLE_TEST'])"]
    container["args"] = ["$(GREETING)"]
    container["env"] = [{"name": "GREETING", "value": "hi-there"}]
    core.create_namespaced_pod("commands", pod)

    wait_for(lambda: phase(core, "expander", "commands") == "Succeeded", "the pod")
    assert core.read_namespaced_pod_log("expander", "commands", tail_lines=1) == "hi-there 1\n"


def test_a_pod_runs_in_a_fresh_directory_under_the_workdir(core, kube_double, wait_for) -> None:
    core.create_namespaced_pod("commands", python_pod("where", "import os; print(os.getcwd())"))
    wait_for(lambda: phase(core, "where", "commands") == "Succeeded", "the pod")
    directory = pathlib.Path(core.read_namespaced_pod_log("where", "commands").strip())
    assert directory.is_relative_to(kube_double.workdir) and directory.is_dir()


def test_evicting_a_pending_pod_fails_it_and_it_is_never_placed(core, kube_double, wait_for) -> None:
    core.create_namespaced_pod("evicting", python_pod("stuck", "pass", nodeSelector={"accelerator": "none"}))
    wait_for(lambda: core.read_namespaced_pod("stuck", "evicting").status.conditions, "the scheduler's verdict")

    kube_double.evict("evicting", "stuck", message="evicted while pending")

    pod = wait_for(lambda: (p := core.read_namespaced_pod("stuck", "evicting")).status.phase == "Failed" and p, "")
    assert (pod.status.reason, pod.spec.node_name) == ("Evicted", None)
