"""A master whose resource manager is Kubernetes, in front of this run's Kubernetes API TEST DOUBLE
(tests/k8s_server.py): `k8s_master` (the test's namespace, one pool `default` on the test's own nodes, cpu slots of
one CPU, no agent of the master's own). Each pod runs the real pod agent (`stalwart.agent.pod`) as a local process
of the double, with this venv's Python; the image is recorded by the double, not pulled."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import yaml

from integration.helpers import logs
from stalwart.testing import LocalTestCluster

IMAGE = "registry.example/stalwart-trial:1.0"


def k8s_master_config(space, **rm: object) -> str:
    return yaml.safe_dump({
        "resource_manager": {"type": "kubernetes", "slot_type": "cpu", "slot_resource_requests": {"cpu": 1},
                             "kubeconfig": str(space.api.kubeconfig), "default_namespace": space.namespace,
                             "agent_command": [sys.executable, "-m", "stalwart.agent.pod"],
                             "gang_start_timeout": 20, **rm},
        "resource_pools": [{"pool_name": "default",
                            "task_container_defaults": {"cpu_pod_spec": space.selector("default")}}],
    })


@contextmanager
def k8s_master(space, tmp_path, nodes: int = 1, cpus: int = 4, **rm: object) -> Iterator[LocalTestCluster]:
    """A master in front of the double, with `nodes` nodes of `cpus` CPUs of the test's own."""
    for i in range(nodes):
        space.add_node(f"node{i}", cpu=cpus)
    with LocalTestCluster(tmp_path / "home", agents=0, master_config=k8s_master_config(space, **rm)) as c:
        c.space = space
        yield c


def our_pods(c, phase: str | None = None) -> list[dict]:
    return [p for p in c.space.pods() if phase is None or p["status"].get("phase") == phase]


def running_pod(c) -> dict:
    return c.wait_for(lambda: next(iter(our_pods(c, "Running")), None), timeout=60, what="a Running pod")


def failure_details(c, trial_id: int) -> str:
    return "\n".join(line["log"] for line in logs(c, trial_id))[-4000:] + c.log("master.log")[-3000:]
