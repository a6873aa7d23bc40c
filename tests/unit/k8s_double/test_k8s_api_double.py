"""The Kubernetes API test double, driven through the official `kubernetes` client: Jobs run their pods as real
processes, watches replay and stream in resourceVersion order, compaction answers 410, errors are Status
objects with the real codes, and every call is recorded with its RBAC verb."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s_client, watch as k8s_watch
from kubernetes.client.rest import ApiException

from k8s_double_bodies import python_job, python_pod
from stalwart.testing.k8s_api_double import KubeApiDouble


def test_a_job_runs_its_pod_to_success_and_serves_its_log(core, batch, wait_for) -> None:
    batch.create_namespaced_job("jobs", python_job("hello", "print('hello from the pod')"))

    job = wait_for(lambda: (j := batch.read_namespaced_job("hello", "jobs")).status.succeeded == 1 and j, "success")
    assert [(c.type, c.status) for c in job.status.conditions] == [("Complete", "True")]
    assert job.status.active is None

    pods = core.list_namespaced_pod("jobs", label_selector="job-name=hello").items
    assert len(pods) == 1
    pod = pods[0]
    assert pod.metadata.name.startswith("hello-") and len(pod.metadata.name) == len("hello-") + 5
    assert pod.metadata.labels["batch.kubernetes.io/job-name"] == "hello"
    assert pod.metadata.labels["role"] == "trial"
    assert pod.metadata.owner_references[0].uid == job.metadata.uid
    assert pod.status.phase == "Succeeded"
    assert pod.spec.node_name in ("node-a", "node-gpu")
    assert pod.status.container_statuses[0].state.terminated.reason == "Completed"
    assert core.read_namespaced_pod_log(pod.metadata.name, "jobs") == "hello from the pod\n"


def test_a_failed_pod_fails_a_job_with_backoff_limit_zero(core, batch, wait_for) -> None:
    batch.create_namespaced_job("jobs", python_job("broken", "import sys; print('bad'); sys.exit(3)"))

    job = wait_for(lambda: (j := batch.read_namespaced_job("broken", "jobs")).status.failed == 1 and j, "failure")
    assert job.status.conditions[0].type == "Failed"
    assert job.status.conditions[0].reason == "BackoffLimitExceeded"
    pods = core.list_namespaced_pod("jobs", label_selector="job-name=broken").items
    assert [p.status.container_statuses[0].state.terminated.exit_code for p in pods] == [3]


def test_deleting_a_job_in_background_deletes_its_pods(core, batch, wait_for) -> None:
    batch.create_namespaced_job("jobs", python_job("sleeper", "import time; time.sleep(60)"))
    wait_for(lambda: core.list_namespaced_pod("jobs", label_selector="job-name=sleeper").items, "the job's pod")

    batch.delete_namespaced_job("sleeper", "jobs", propagation_policy="Background", grace_period_seconds=0)

    wait_for(lambda: not core.list_namespaced_pod("jobs", label_selector="job-name=sleeper").items, "pods deleted")
    with pytest.raises(ApiException) as missing:
        batch.read_namespaced_job("sleeper", "jobs")
    assert missing.value.status == 404


def test_a_watch_from_a_list_sees_added_modified_and_deleted_in_order(core, wait_for) -> None:
    listed = core.list_namespaced_pod("watched")
    core.create_namespaced_pod("watched", python_pod("short", "print('done')"))

    seen = []
    watcher = k8s_watch.Watch()
    for event in watcher.stream(
        core.list_namespaced_pod, "watched", resource_version=listed.metadata.resource_version, timeout_seconds=15
    ):
        pod = event["object"]
        seen.append((event["type"], pod.status.phase, int(pod.metadata.resource_version)))
        if event["type"] == "MODIFIED" and pod.status.phase == "Succeeded":
            core.delete_namespaced_pod("short", "watched")
        if event["type"] == "DELETED":
            watcher.stop()

    types = [t for t, _, _ in seen]
    assert types[0] == "ADDED" and types[-1] == "DELETED"
    assert set(types[1:-1]) == {"MODIFIED"}
    assert [phase for _, phase, _ in seen[1:-1]][-2:] == ["Running", "Succeeded"]
    versions = [v for _, _, v in seen]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)


def test_expired_history_answers_410_and_a_fresh_list_recovers(core, kube_double, wait_for) -> None:
    for name in ("one", "two"):
        core.create_namespaced_pod("expiry", python_pod(name, "pass"))
    stale = core.list_namespaced_pod("expiry").metadata.resource_version
    kube_double.expire_history()

    with pytest.raises(ApiException) as gone:
        for _ in k8s_watch.Watch().stream(core.list_namespaced_pod, "expiry", resource_version=stale):
            pass
    assert gone.value.status == 410

    fresh = core.list_namespaced_pod("expiry")
    assert sorted(p.metadata.name for p in fresh.items) == ["one", "two"]
    core.create_namespaced_pod("expiry", python_pod("three", "pass"))
    watcher = k8s_watch.Watch()
    stream = watcher.stream(
        core.list_namespaced_pod, "expiry", resource_version=fresh.metadata.resource_version, timeout_seconds=10
    )
    first = next(e for e in stream if e["object"].metadata.name == "three")  # one and two may still be running
    watcher.stop()
    assert first["type"] == "ADDED"


def test_a_watch_with_bookmarks_gets_the_current_resource_version(core) -> None:
    listed = core.list_namespaced_pod("bookmarks")
    events = k8s_watch.Watch().stream(
        core.list_namespaced_pod,
        "bookmarks",
        resource_version=listed.metadata.resource_version,
        allow_watch_bookmarks=True,
        timeout_seconds=2,
    )
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks
    assert int(bookmarks[-1]["raw_object"]["metadata"]["resourceVersion"]) >= int(listed.metadata.resource_version)


def test_errors_are_status_objects_with_the_real_codes(core) -> None:
    core.create_namespaced_pod("errors", python_pod("taken", "pass"))
    with pytest.raises(ApiException) as duplicate:
        core.create_namespaced_pod("errors", python_pod("taken", "pass"))
    assert duplicate.value.status == 409
    assert '"reason":"AlreadyExists"' in duplicate.value.body.replace(" ", "")

    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("nobody", "errors")
    assert missing.value.status == 404

    no_containers = python_pod("empty", "pass")
    no_containers["spec"]["containers"] = []
    for body in (no_containers, python_pod("Bad_Name", "pass"), python_pod("x" * 64, "pass")):
        with pytest.raises(ApiException) as bad:
            core.create_namespaced_pod("errors", body)
        assert bad.value.status == 422, body["metadata"]["name"]


def test_calls_without_the_token_get_401(kube_double: KubeApiDouble) -> None:
    configuration = k8s_client.Configuration()
    configuration.host = kube_double.url
    with k8s_client.ApiClient(configuration) as anonymous, pytest.raises(ApiException) as refused:
        k8s_client.CoreV1Api(anonymous).list_namespaced_pod("default")
    assert refused.value.status == 401


def test_injected_failures_answer_once_then_the_call_succeeds(core, kube_double) -> None:
    kube_double.fail_next("create", "secrets", status=500)
    secret = {"metadata": {"name": "flaky"}, "stringData": {"k": "v"}}
    with pytest.raises(ApiException) as failed:
        core.create_namespaced_secret("faults", secret)
    assert failed.value.status == 500
    assert core.create_namespaced_secret("faults", secret).metadata.name == "flaky"


def test_calls_are_recorded_with_their_rbac_verb_and_resource(core, batch, kube_double) -> None:
    batch.list_namespaced_job("recorded", label_selector="owner=t")
    list(k8s_watch.Watch().stream(core.list_namespaced_pod, "recorded", timeout_seconds=1))
    core.delete_collection_namespaced_secret("recorded", label_selector="stalwart=yes")

    recorded = [(c.verb, c.resource, c.api_group) for c in kube_double.calls if "/namespaces/recorded/" in c.path]
    assert recorded == [("list", "jobs", "batch"), ("watch", "pods", ""), ("deletecollection", "secrets", "")]
    job_list = next(c for c in kube_double.calls if c.path == "/apis/batch/v1/namespaces/recorded/jobs")
    assert job_list.query["labelSelector"] == "owner=t"


def test_nodes_report_their_allocatable_resources_labels_and_readiness(core) -> None:
    nodes = {n.metadata.name: n for n in core.list_node().items}
    assert sorted(nodes) == ["node-a", "node-gpu"]
    assert nodes["node-gpu"].status.allocatable["nvidia.com/gpu"] == "1"
    assert "nvidia.com/gpu" not in nodes["node-a"].status.allocatable
    assert nodes["node-gpu"].metadata.labels["accelerator"] == "a100"
    assert [(c.type, c.status) for c in nodes["node-a"].status.conditions] == [("Ready", "True")]
    assert core.read_namespace("anything").status.phase == "Active"


def test_a_body_for_another_namespace_is_refused(core) -> None:
    body = python_pod("elsewhere", "pass")
    body["metadata"]["namespace"] = "other"
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("errors", body)
    assert refused.value.status == 400 and "does not match the namespace" in refused.value.body
