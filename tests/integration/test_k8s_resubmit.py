"""A run whose pods vanish before it starts is submitted again (the Kubernetes manager, issue 31), on this run's
Kubernetes API TEST DOUBLE (tests/k8s_server.py): another tenant's pod holds the node, so the run's pod waits
Unschedulable; its Job is then deleted behind the master's back. After `gang_start_timeout` with no pod the run
gets new pods, and it starts once the node is free."""

from __future__ import annotations

import time

import httpx
import pytest

from k8s_server import K8sWorld
from stalwart.master.queries import engine_jobs
from stalwart.master.scheduling import scheduling

pytestmark = pytest.mark.integration


def _hog(space) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hog"},
            "spec": {"nodeSelector": space.selector()["spec"]["nodeSelector"],
                     "containers": [{"name": "hog", "image": "busybox", "command": ["sh", "-c", "exec sleep 600"],
                                     "resources": {"requests": {"cpu": "1"}}}]}}


def _job_of(world, allocation_id: str) -> str | None:
    with world.master.db.begin() as conn:
        return next((r["engine_job_id"] for r in engine_jobs.with_jobs(conn, [allocation_id])), None)


def test_a_run_whose_pods_vanish_before_it_starts_is_submitted_again(tmp_path, k8s_space):
    world = K8sWorld(tmp_path, k8s_space, gang_start_timeout=1)
    k8s = httpx.Client(base_url=k8s_space.api.url, headers={"authorization": f"Bearer {k8s_space.api.token}"})
    hogs = f"/api/v1/namespaces/{k8s_space.namespace}-hog/pods"
    try:
        world.add_node(1)
        assert k8s.post(hogs, json=_hog(k8s_space)).status_code == 201
        exp = world.create(1)
        world.tick()
        run = world.runs_of(exp)[-1]
        first = _job_of(world, run)
        assert first is not None and world.status(run).state == "PENDING"
        assert "Insufficient cpu" in (world.status(run).pending_reason or "")
        [old] = k8s_space.pods()
        assert k8s.delete(f"/apis/batch/v1/namespaces/{k8s_space.namespace}/jobs/{first}-0",
                          params={"propagationPolicy": "Background", "gracePeriodSeconds": "0"}).status_code == 200
        deadline = time.monotonic() + 30
        while not _a_new_pod(k8s_space, old["metadata"]["uid"]):  # gone, then made again after the timeout
            assert time.monotonic() < deadline, (world.status(run), k8s_space.pods())
            scheduling.tick(world.master)
            time.sleep(0.2)
        assert k8s.delete(f"{hogs}/hog", params={"gracePeriodSeconds": "0"}).status_code == 200
        world.tick()
        status = world.status(run)
        assert status.state == "ASSIGNED" and status.containers, status
    finally:
        k8s.delete(f"{hogs}/hog", params={"gracePeriodSeconds": "0"})
        k8s.close()
        world.close()


def _a_new_pod(space, old_uid: str) -> bool:
    """The run has a pod again, and it is not the one whose Job was deleted."""
    pods = [p for p in space.pods() if not p["metadata"].get("deletionTimestamp")]
    return bool(pods) and all(p["metadata"]["uid"] != old_uid for p in pods)
