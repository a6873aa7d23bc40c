"""A run's Kubernetes manifests (stalwart.rm.kubernetes.pods): slots split into pods, the task container's
resources, the user's pod_spec merged as Determined merges it, and the join credential only in the Secret."""

from __future__ import annotations

import json

import pytest

from stalwart.rm.kubernetes import pods as m


def run(**kw) -> m.RunPods:
    base = dict(name="stalwart-a1", namespace="team", prefix="stalwart-", allocation_id="a1", pool="gpus", pods=2,
                slots_per_pod=4, slot_type="cuda", image="reg.example/train:1", command=("python3", "-m", "x"),
                master_url="http://master:8080")
    return m.RunPods(**(base | kw))


@pytest.mark.parametrize(("slots", "per_pod", "want"), [(1, None, (1, 1)), (8, None, (1, 8)), (8, 4, (2, 4)),
                                                        (4, 8, (1, 4)), (0, 2, (1, 0))])
def test_slots_split_evenly_into_pods(slots, per_pod, want):
    assert m.split_slots(slots, per_pod) == want


def test_slots_that_do_not_divide_are_refused_naming_the_fix():
    with pytest.raises(m.PodSpecError, match="6 slots do not split evenly into pods of at most 4.*multiple of 4"):
        m.split_slots(6, 4)


def test_each_rank_is_a_job_of_one_never_retried_pod_with_its_slots_as_gpus():
    job = m.job(run(), 1)
    assert job["metadata"]["name"] == "stalwart-a1-1" and job["spec"]["backoffLimit"] == 0
    pod = job["spec"]["template"]
    assert pod["spec"]["restartPolicy"] == "Never"
    labels = pod["metadata"]["labels"]
    assert labels[m.LABEL_ALLOCATION] == "a1" and labels[m.LABEL_RANK] == "1" and labels[m.LABEL_PODS] == "2"
    [c] = pod["spec"]["containers"]
    assert c["image"] == "reg.example/train:1" and c["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert c["command"][:3] == ["python3", "-m", "x"] and "--agent-id" in c["command"]
    assert c["command"][c["command"].index("--agent-id") + 1] == "stalwart-a1-1"


def test_cpu_slots_ask_cpus_per_slot():
    c = m.task_container(run(slot_type="cpu", slots_per_pod=3, cpu_request=0.5), 0)
    assert c["resources"]["requests"] == {"cpu": "1500m"} == c["resources"]["limits"]


def test_the_join_credential_is_only_in_the_secret_never_in_a_pod_spec():
    r = run()
    secret = m.join_secret(r, "s3cr3t-token")
    assert secret["stringData"] == {m.SECRET_KEY: "s3cr3t-token"}
    job = m.job(r, 0)
    assert "s3cr3t-token" not in json.dumps(job)
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env[m.JOIN_TOKEN_ENV]["valueFrom"]["secretKeyRef"] == {"name": "stalwart-a1", "key": m.SECRET_KEY}


def test_pod_spec_is_merged_as_determined_merges_it():
    user = {"metadata": {"labels": {"team": "vision"}, "name": "ignored"},
            "spec": {"nodeSelector": {"gpu": "a100"}, "tolerations": [{"key": "gpu", "operator": "Exists"}],
                     "serviceAccountName": "trainer", "volumes": [{"name": "data", "emptyDir": {}}],
                     "restartPolicy": "Always",
                     "containers": [
                         {"name": "determined-container", "image": "theirs", "args": ["x"],
                          "resources": {"limits": {"memory": "8Gi", "nvidia.com/gpu": "1"}},
                          "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                          "env": [{"name": "HF_HOME", "value": "/data/hf"}]},
                         {"name": "sidecar", "image": "busybox"}]}}
    pod = m.pod_template(run(pod_spec=user), 0)
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"gpu": "a100"} and spec["serviceAccountName"] == "trainer"
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}] and spec["restartPolicy"] == "Never"
    task, sidecar = spec["containers"]
    assert sidecar == {"name": "sidecar", "image": "busybox"}
    assert task["name"] == m.TASK_CONTAINER and task["image"] == "reg.example/train:1" and "args" not in task
    assert task["resources"]["limits"] == {"memory": "8Gi", "nvidia.com/gpu": "4"}  # the slots are ours
    assert task["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert [e["name"] for e in task["env"]] == [m.JOIN_TOKEN_ENV, "HF_HOME"]
    assert pod["metadata"]["labels"]["team"] == "vision" and "name" not in pod["metadata"]


def test_pod_requests_read_cpu_quantities_and_gpus():
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "500m"}, "limits": {"amd.com/gpu": "2"}}},
                                   {"resources": {"limits": {"cpu": "1"}}}]}}
    assert m.pod_requests(pod) == {"cpu": 1.5, "gpu": 2.0}
