"""The Kubernetes API TEST DOUBLE (stalwart.testing.k8s_api_double), started once per test run (per xdist worker)
with no nodes: each test adds its own, labelled with its own pool label so that no test's pods land on another's
nodes, and uses its own namespace (`k8s_space`).

`K8sWorld` is the resource-manager conformance world of the Kubernetes manager on a space: pods run a stand-in
command (`sleep`) instead of the one-shot agent, and the world plays the one-shot agents in-process, as the Slurm
world does: it takes the start orders from the action long-poll's answer (`cluster.agents.pending_actions`) and
reports through `allocations.lifecycle`."""

from __future__ import annotations

import contextlib
import itertools
import os
import pathlib
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from stalwart.master.allocations import containers, lifecycle
from stalwart.master.cluster import agents
from stalwart.master.queries import agents as agent_rows, engine_jobs
from stalwart.master.scheduling import k8s_submit, scheduling
from stalwart.rm.kubernetes.pods import LABEL_ALLOCATION
from stalwart.testing.k8s_api_double import KubeApiDouble, NodeSpec
from stalwart.testing.rm_conformance import POOLS, World, master_config

POOL_LABEL = "stalwart-test/pool"
_spaces = itertools.count(1)
_pids = itertools.count(100)
_nodes = itertools.count(1)
STANDIN = ["sh", "-c", "exec sleep 600", "--"]  # holds a pod in place of the one-shot agent (its arguments follow)
SETTLE_S, QUIET_S = 30.0, 0.6


@pytest.fixture(scope="session")
def k8s_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiDouble]:
    venv_bin = str(pathlib.Path(sys.executable).parent)
    env = {"PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    with KubeApiDouble(tmp_path_factory.mktemp("k8s-api"), nodes=[], extra_env=env) as double:
        yield double


@dataclass
class K8sSpace:
    """One test's corner of the shared double: its namespace and a label value its nodes carry."""

    api: KubeApiDouble
    namespace: str
    tag: str
    nodes: list[str] = field(default_factory=list)

    def add_node(self, name: str, cpu: int, gpus: int = 0, pool: str = "default") -> str:
        node = f"{self.tag}-{name}"
        self.api.add_node(NodeSpec(node, cpu=cpu, gpus=gpus, labels={POOL_LABEL: f"{self.tag}-{pool}"}))
        self.nodes.append(node)
        return node

    def remove_node(self, node: str) -> None:
        self.api.remove_node(node)
        self.nodes.remove(node)

    def selector(self, pool: str = "default") -> dict[str, object]:
        """A pool's `cpu_pod_spec`/`gpu_pod_spec` that keeps its pods on this space's nodes of `pool`."""
        return {"spec": {"nodeSelector": {POOL_LABEL: f"{self.tag}-{pool}"}}}

    def pods(self) -> list[dict]:
        return self.api.pods(self.namespace)


@pytest.fixture
def k8s_space(k8s_api: KubeApiDouble) -> Iterator[K8sSpace]:
    n = next(_spaces)
    space = K8sSpace(k8s_api, f"t{os.getpid()}-{n}", f"w{os.getpid()}-{n}")
    yield space
    for node in list(space.nodes):
        space.remove_node(node)


class K8sWorld(World):
    """A master whose pools the Kubernetes manager serves in `space` (its namespace, its nodes; cpu slots of one
    CPU, one slot a pod), its pods started with `agent_command`; the one-shot agents are this world's calls."""

    extra_config = "environment: {image: 'registry.example/stalwart-trial:1'}\n"

    def __init__(self, home: pathlib.Path, space: K8sSpace, agent_command: Sequence[str] = STANDIN,
                 **rm_keys: Any) -> None:
        rm = {"type": "kubernetes", "slot_type": "cpu", "slot_resource_requests": {"cpu": 1}, "max_slots_per_pod": 1,
              "kubeconfig": str(space.api.kubeconfig), "default_namespace": space.namespace,
              "agent_command": list(agent_command), **rm_keys}
        pools = [{"pool_name": p, "task_container_defaults": {"cpu_pod_spec": space.selector(p)}} for p in POOLS]
        home.mkdir(parents=True, exist_ok=True)
        super().__init__(home, master_config("kubernetes") | {"resource_manager": rm, "resource_pools": pools})
        self.space = space

    def add_node(self, slots: int, pool: str = "default") -> str:
        return self.space.add_node(f"n{next(_nodes)}", cpu=slots, pool=pool)

    def tick(self) -> None:
        """Passes until the pods and the master's rows have stopped changing for a while (the double's scheduler
        and kubelet work on their own time; the informer hears of it by its watch)."""
        deadline, seen, since = time.monotonic() + SETTLE_S, None, time.monotonic()
        while time.monotonic() < deadline:
            scheduling.tick(self.master)
            now = self._state()
            if now != seen:
                seen, since = now, time.monotonic()
            elif time.monotonic() - since >= QUIET_S:
                return
            time.sleep(0.1)
        raise AssertionError(f"the pods and the master did not settle in {SETTLE_S:.0f} s: {seen}")

    def _state(self) -> tuple[Any, ...]:
        with self.master.db.begin() as conn:
            rows = sorted((r["id"], r["state"], r["engine_job_id"]) for r in engine_jobs.with_jobs(conn))
        pods = sorted((p["metadata"]["name"], p["status"].get("phase"), p["spec"].get("nodeName") or "")
                      for p in self.space.pods())
        return tuple(rows), tuple(pods)

    def _containers(self, allocation_id: str) -> list[Any]:
        with self.master.db.begin() as conn:
            return list(containers.of_allocation(conn, allocation_id))

    def start(self, allocation_id: str, ranks: Sequence[int] | None = None) -> None:
        for c in self._containers(allocation_id):
            if ranks is None or c["container_rank"] in ranks:
                orders = agents.pending_actions(self.master, c["agent_id"])["start"]  # the long-poll's answer
                assert allocation_id in [o["allocation_id"] for o in orders], orders
                assert not lifecycle.mark_started(self.master, c["agent_id"], allocation_id, next(_pids)).kill

    def exit(self, allocation_id: str, code: int | None) -> None:
        """The run's agents report its end, then leave their pods (a one-shot agent exits once reported)."""
        for c in self._containers(allocation_id):
            if c["state"] != "TERMINATED":
                lifecycle.mark_exited(self.master, c["agent_id"], allocation_id, code)
        for pod in self.space.pods():
            started = (pod["status"].get("containerStatuses") or [{}])[0].get("containerID") or ""
            if pod["metadata"]["labels"].get(LABEL_ALLOCATION) == allocation_id and started.startswith("double://"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(started.removeprefix("double://")), signal.SIGTERM)

    def lose_node(self, node: str) -> None:
        self.space.remove_node(node)

    def kill_orders(self, allocation_id: str) -> set[str]:
        told = set()
        for c in self._containers(allocation_id):
            if allocation_id in agents.pending_actions(self.master, c["agent_id"])["kill"]:
                with self.master.db.begin() as conn:
                    told.add(agent_rows.get(conn, c["agent_id"])["hostname"])
        return told

    def close(self) -> None:
        k8s_submit.close_links(self.master)
        super().close()
