"""The resource-manager conformance suite (`stalwart.testing.rm_conformance`) against the Kubernetes manager, on
this run's Kubernetes API TEST DOUBLE (tests/k8s_server.py; each check in its own namespace, on its own nodes).

The pods are real objects of the double, placed by its scheduler on the check's nodes (cpu slots, one CPU each);
inside each, instead of the one-shot agent, a stand-in command holds the pod (`sleep`), and this world plays the
one-shot agents in-process as the Slurm world does: it takes the start orders from the action long-poll's answer
(`cluster.agents.pending_actions`) and reports through `allocations.lifecycle`. The real pod agent runs in
tests/e2e/test_k8s_trials.py. Losing a node is the double's node removal (its pods are force-deleted)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence

import pytest

from stalwart.master.allocations import containers, lifecycle
from stalwart.master.cluster import agents
from stalwart.master.queries import agents as agent_rows, engine_jobs
from stalwart.master.scheduling import k8s_submit, scheduling
from stalwart.testing.rm_conformance import CHECKS, POOLS, World, master_config, run_check

_pids = itertools.count(100)
_nodes = itertools.count(1)
STANDIN = ["sh", "-c", "exec sleep 600", "--"]
STABLE_S = 0.6


class K8sWorld(World):
    extra_config = "environment: {image: 'registry.example/stalwart-trial:1'}\n"

    def __init__(self, home, space) -> None:
        rm = {"type": "kubernetes", "slot_type": "cpu", "slot_resource_requests": {"cpu": 1},
              "kubeconfig": str(space.api.kubeconfig), "default_namespace": space.namespace,
              "agent_command": STANDIN, "max_slots_per_pod": 1}
        pools = [{"pool_name": p, "task_container_defaults": {"cpu_pod_spec": space.selector(p)}} for p in POOLS]
        super().__init__(home, master_config("kubernetes") | {"resource_manager": rm, "resource_pools": pools})
        self.space = space

    def add_node(self, slots: int, pool: str = "default") -> str:
        return self.space.add_node(f"n{next(_nodes)}", cpu=slots, pool=pool)

    def tick(self) -> None:
        """A pass, repeated until the pods and the rows agree and have stayed so a while (the double's scheduler
        and kubelet work on their own time, and the informer hears of it by its watch)."""
        deadline, last, since = time.monotonic() + 30, None, time.monotonic()
        while time.monotonic() < deadline:
            scheduling.tick(self.master)
            seen = self._snapshot()
            if seen != last:
                last, since = seen, time.monotonic()
            elif time.monotonic() - since >= STABLE_S:
                return
            time.sleep(0.1)
        raise AssertionError(f"the pods and the master did not settle in 30 s: {last}")

    def _snapshot(self) -> tuple[object, ...]:
        with self.master.db.begin() as conn:
            rows = sorted((r["id"], r["state"], r["engine_job_id"]) for r in engine_jobs.with_jobs(conn))
        pods = sorted((p["metadata"]["name"], p["status"].get("phase"), p["spec"].get("nodeName") or "")
                      for p in self.space.pods())
        return (tuple(rows), tuple(pods))

    def _agents_of(self, allocation_id: str) -> Iterator[tuple[int, str]]:
        with self.master.db.begin() as conn:
            rows = containers.of_allocation(conn, allocation_id)
        for c in rows:
            yield c["container_rank"], c["agent_id"]

    def start(self, allocation_id: str, ranks: Sequence[int] | None = None) -> None:
        for rank, agent_id in self._agents_of(allocation_id):
            if ranks is not None and rank not in ranks:
                continue
            orders = agents.pending_actions(self.master, agent_id)["start"]
            assert allocation_id in [o["allocation_id"] for o in orders], orders
            assert not lifecycle.mark_started(self.master, agent_id, allocation_id, next(_pids)).kill

    def exit(self, allocation_id: str, code: int | None) -> None:
        with self.master.db.begin() as conn:
            live = [c["agent_id"] for c in containers.of_allocation(conn, allocation_id) if c["state"] != "TERMINATED"]
        for agent_id in live:
            lifecycle.mark_exited(self.master, agent_id, allocation_id, code)

    def lose_node(self, node: str) -> None:
        self.space.remove_node(node)

    def kill_orders(self, allocation_id: str) -> set[str]:
        told = set()
        for _rank, agent_id in self._agents_of(allocation_id):
            if allocation_id in agents.pending_actions(self.master, agent_id)["kill"]:
                with self.master.db.begin() as conn:
                    told.add(agent_rows.get(conn, agent_id)["hostname"])
        return told

    def close(self) -> None:
        k8s_submit.close_links(self.master)
        super().close()


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_kubernetes_manager_conforms(check, tmp_path, k8s_space):
    if (why := run_check(K8sWorld(tmp_path, k8s_space), check)) is not None:
        pytest.skip(why)
