"""The Kubernetes API test double's controllers and less common API options, through the official `kubernetes`
client: parallel Jobs, Foreground and Orphan deletion, TTL after finished, nodes coming and going with taints,
followed logs, field selectors, watches without a resourceVersion and over all namespaces."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s_client, config as k8s_config, watch as k8s_watch
from kubernetes.client.rest import ApiException

from k8s_double_bodies import python_job, python_pod
from stalwart.testing.k8s_api_double import KubeApiDouble, NodeSpec


def job_pods(core, namespace: str, job: str) -> list:
    return core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items


def test_a_parallel_job_runs_one_pod_per_parallelism(core, batch, wait_for) -> None:
    body = python_job("wide", "print('part')")
    body["spec"]["parallelism"] = 3
    batch.create_namespaced_job("ctl", body)

    job = wait_for(lambda: (j := batch.read_namespaced_job("wide", "ctl")).status.conditions and j, "the job")
    assert (job.status.conditions[0].type, job.status.succeeded) == ("Complete", 3)
    assert len({p.metadata.name for p in job_pods(core, "ctl", "wide")}) == 3


def test_foreground_deletion_removes_the_job_after_its_pods(core, batch, wait_for) -> None:
    batch.create_namespaced_job("ctl", python_job("fg", "import time; time.sleep(60)"))
    wait_for(lambda: any(p.status.phase == "Running" for p in job_pods(core, "ctl", "fg")), "the pod running")

    batch.delete_namespaced_job("fg", "ctl", propagation_policy="Foreground")

    def gone() -> bool:
        try:
            batch.read_namespaced_job("fg", "ctl")
        except ApiException as error:
            return error.status == 404
        return False

    wait_for(gone, "the job removed")
    assert job_pods(core, "ctl", "fg") == []


def test_orphan_deletion_leaves_the_pods_without_their_owner(core, batch, wait_for) -> None:
    batch.create_namespaced_job("ctl", python_job("orphaned", "pass"))
    wait_for(lambda: job_pods(core, "ctl", "orphaned"), "the job's pod")

    batch.delete_namespaced_job("orphaned", "ctl")

    pods = wait_for(lambda: [p for p in job_pods(core, "ctl", "orphaned") if not p.metadata.owner_references], "")
    assert len(pods) == 1


def test_ttl_after_finished_deletes_the_job_and_its_pods(core, batch, wait_for) -> None:
    body = python_job("brief", "pass")
    body["spec"]["ttlSecondsAfterFinished"] = 0
    batch.create_namespaced_job("ctl", body)
    wait_for(lambda: not batch.list_namespaced_job("ctl", field_selector="metadata.name=brief").items, "the TTL")
    wait_for(lambda: not job_pods(core, "ctl", "brief"), "the pods deleted")


def test_a_new_tainted_node_takes_tolerating_pods_and_its_removal_deletes_them(core, kube_double, wait_for) -> None:
    taint = {"key": "dedicated", "value": "trials", "effect": "NoSchedule"}
    pod = python_pod("tolerant", "import time; time.sleep(60)", nodeSelector={"pool": "tainted"})
    pod["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "trials", "effect": "NoSchedule"}]
    core.create_namespaced_pod("nodes", pod)
    core.create_namespaced_pod("nodes", python_pod("intolerant", "pass", nodeSelector={"pool": "tainted"}))
    kube_double.add_node(NodeSpec("node-tainted", cpu=2, labels={"pool": "tainted"}, taints=[taint]))
    try:
        wait_for(lambda: core.read_namespaced_pod("tolerant", "nodes").status.phase == "Running", "the pod running")
        assert core.read_namespaced_pod("tolerant", "nodes").spec.node_name == "node-tainted"
        pid = int(core.read_namespaced_pod("tolerant", "nodes").status.container_statuses[0].container_id[9:])

        def untolerated():
            conditions = core.read_namespaced_pod("intolerant", "nodes").status.conditions or []
            return next((c.message for c in conditions if "untolerated taint" in (c.message or "")), None)

        assert "1 node(s) had untolerated taint {dedicated: trials}" in wait_for(untolerated, "the taint message")
    finally:
        kube_double.remove_node("node-tainted")
    left = {p.metadata.name for p in core.list_namespaced_pod("nodes").items}  # other tests' pods share "nodes"
    assert left & {"tolerant", "intolerant"} == {"intolerant"}
    wait_for(lambda: not _alive(pid), "the pod's process killed")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_a_followed_log_streams_until_the_process_ends(core, wait_for) -> None:
    code = "import time\nfor i in range(3):\n    print('line', i, flush=True)\n    time.sleep(0.2)"
    core.create_namespaced_pod("logs", python_pod("chatty", code))
    wait_for(lambda: core.read_namespaced_pod("chatty", "logs").status.phase != "Pending", "the pod started")

    response = core.read_namespaced_pod_log("chatty", "logs", follow=True, _preload_content=False)
    text = b"".join(response.stream()).decode()
    assert text == "line 0\nline 1\nline 2\n"


def test_a_watch_without_resource_version_starts_with_the_current_pods(core, wait_for) -> None:
    core.create_namespaced_pod("snapshot", python_pod("present", "pass"))
    events = k8s_watch.Watch().stream(core.list_namespaced_pod, "snapshot", timeout_seconds=1)
    first = next(iter(events))
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "present")


def test_a_watch_over_all_namespaces_with_a_label_selector(core) -> None:
    start = core.list_pod_for_all_namespaces().metadata.resource_version
    labelled = python_pod("labelled", "pass")
    labelled["metadata"]["labels"]["pick"] = "me"
    core.create_namespaced_pod("ns-one", labelled)
    core.create_namespaced_pod("ns-two", python_pod("unlabelled", "pass"))
    watcher = k8s_watch.Watch()
    stream = watcher.stream(
        core.list_pod_for_all_namespaces, label_selector="pick in (me,you)", resource_version=start, timeout_seconds=2
    )
    names = {(e["object"].metadata.namespace, e["object"].metadata.name) for e in stream}
    assert names == {("ns-one", "labelled")}


def test_generate_name_and_the_python_view_of_pods(core, kube_double) -> None:
    body = python_pod("ignored", "pass")
    body["metadata"] = {"generateName": "trial-"}
    created = core.create_namespaced_pod("generated", body)
    assert created.metadata.name.startswith("trial-") and len(created.metadata.name) == 11
    assert [p["metadata"]["name"] for p in kube_double.pods("generated")] == [created.metadata.name]


def test_an_unknown_path_is_a_404_status(api_client) -> None:
    with pytest.raises(ApiException) as unknown:
        api_client.call_api("/api/v1/namespaces/x/configmaps", "GET", auth_settings=["BearerToken"])
    assert unknown.value.status == 404


def test_a_job_must_not_restart_always_and_its_status_is_served(core, batch, wait_for) -> None:
    always = python_job("forever", "pass")
    always["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(ApiException) as refused:
        batch.create_namespaced_job("ctl", always)
    assert refused.value.status == 422 and "restartPolicy" in refused.value.body

    batch.create_namespaced_job("ctl", python_job("statused", "pass"))
    assert wait_for(lambda: batch.read_namespaced_job_status("statused", "ctl").status.succeeded, "success") == 1


def test_a_pod_pinned_to_an_unknown_node_stays_pending(core, wait_for) -> None:
    core.create_namespaced_pod("nodes", python_pod("pinned", "pass", nodeName="node-nowhere"))
    core.create_namespaced_pod("nodes", python_pod("pinned-known", "pass", nodeName="node-a"))
    wait_for(lambda: core.read_namespaced_pod_status("pinned-known", "nodes").status.phase == "Succeeded", "the run")
    assert core.read_namespaced_pod("pinned", "nodes").status.phase == "Pending"


def test_stop_kills_every_pod_process(tmp_path, wait_for) -> None:
    with KubeApiDouble(tmp_path / "own") as double:
        api = k8s_client.ApiClient(_configuration(double))
        k8s_client.CoreV1Api(api).create_namespaced_pod("d", python_pod("lasting", "import time; time.sleep(60)"))
        pod = wait_for(lambda: [p for p in double.pods("d") if p["status"]["phase"] == "Running"], "running")[0]
        pid = int(pod["status"]["containerStatuses"][0]["containerID"].removeprefix("double://"))
        api.close()
    assert not _alive(pid)
    double.stop()


def _configuration(double: KubeApiDouble) -> k8s_client.Configuration:
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=str(double.kubeconfig), client_configuration=configuration)
    return configuration


def test_a_secret_owned_by_a_job_goes_with_it_unless_orphaned(core, batch, wait_for) -> None:
    for name in ("owned-bg", "owned-orphan"):
        job = batch.create_namespaced_job("gc", python_job(name, "pass"))
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": job.metadata.uid}
        secret = {"metadata": {"name": f"{name}-creds", "ownerReferences": [owner]}, "stringData": {"k": "v"}}
        core.create_namespaced_secret("gc", secret)

    batch.delete_namespaced_job("owned-bg", "gc", propagation_policy="Background")
    batch.delete_namespaced_job("owned-orphan", "gc", propagation_policy="Orphan")

    wait_for(lambda: [s.metadata.name for s in core.list_namespaced_secret("gc").items] == ["owned-orphan-creds"], "gc")
    assert core.read_namespaced_secret("owned-orphan-creds", "gc").metadata.owner_references is None
