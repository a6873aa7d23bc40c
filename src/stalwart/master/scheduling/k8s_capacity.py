"""The Kubernetes nodes as the Kubernetes manager counts them: each node's slots (allocatable GPUs, or for
`slot_type: cpu` allocatable CPUs over `slot_resource_requests.cpu`), which pools may use it (its labels against the
pool's `nodeSelector`, from the pool's `cpu_pod_spec`/`gpu_pod_spec`; its NoSchedule taints against their
tolerations), and what this master's live pods take of it.

`Room` is one pass's free space, used to start a gang only when all of its pods fit at once (first fit, pod by
pod); `capacity` is each pool's size for `resource-pool list`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stalwart.master.scheduling import k8s_submit
from stalwart.master.service import Master
from stalwart.rm import PoolCapacity
from stalwart.rm.kubernetes import RunPods, pods as manifests

Pods = Mapping[str, Mapping[int, Mapping[str, Any]]]


@dataclass
class Node:
    name: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    ready: bool
    cpu: float
    gpu: float
    used_cpu: float = 0.0
    used_gpu: float = 0.0

    @staticmethod
    def of(raw: Mapping[str, Any]) -> Node:
        meta, spec, status = raw.get("metadata") or {}, raw.get("spec") or {}, raw.get("status") or {}
        alloc = status.get("allocatable") or status.get("capacity") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        return Node(meta.get("name", "?"), dict(meta.get("labels") or {}), list(spec.get("taints") or []),
                    ready and not spec.get("unschedulable"), manifests.cpu_amount(alloc.get("cpu")),
                    sum(float(v) for k, v in alloc.items() if k in manifests.GPU_RESOURCE.values()))

    def fits(self, selector: Mapping[str, str], tolerations: Sequence[Mapping[str, Any]]) -> bool:
        if any(self.labels.get(k) != v for k, v in selector.items()):
            return False
        return all(_tolerated(t, tolerations) for t in self.taints if t.get("effect") in ("NoSchedule", "NoExecute"))


def _tolerated(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists" and (not tol.get("key") or tol["key"] == taint.get("key")):
            return True
        if tol.get("key") == taint.get("key") and tol.get("value") == taint.get("value"):
            return True
    return False


def placement(spec: Mapping[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """A pod spec's (`{spec: ...}`) node selector and tolerations."""
    inner = spec.get("spec") or {}
    return dict(inner.get("nodeSelector") or {}), list(inner.get("tolerations") or [])


def nodes_with_use(raw_nodes: Sequence[Mapping[str, Any]], pods: Pods) -> list[Node]:
    nodes = {n.name: n for n in map(Node.of, raw_nodes)}
    for run in pods.values():
        for pod in run.values():
            node = nodes.get((pod.get("spec") or {}).get("nodeName") or "")
            if node is not None and (pod.get("status") or {}).get("phase") in ("Pending", "Running", None):
                asked = manifests.pod_requests(pod)
                node.used_cpu += asked["cpu"]
                node.used_gpu += asked["gpu"]
    return list(nodes.values())


@dataclass
class Room:
    """Free space on the nodes for one pass, by pool."""

    m: Master
    nodes: list[Node]
    cpu_slots: bool
    cpu_per_slot: float
    pools: dict[str, tuple[dict[str, str], list[dict[str, Any]]]] = field(default_factory=dict)

    @staticmethod
    def of(m: Master, raw_nodes: Sequence[Mapping[str, Any]], pods: Pods, pools: Sequence[str]) -> Room:
        cfg = m.settings.cluster.kubernetes
        return Room(m, nodes_with_use(raw_nodes, pods), cfg.cpu_slots, cfg.cpu_request or 1.0,
                    {p: placement(k8s_submit.pool_pod_spec(m, p)) for p in pools})

    def take(self, pool: str, run: RunPods) -> str | None:
        """Place every pod of `run` (first fit) and keep the space taken; else leave all as they were and say
        why it waits."""
        own_sel, own_tol = placement(run.pod_spec)
        sel, tol = self.pools.get(pool, ({}, []))
        sel, tol = {**sel, **own_sel}, [*tol, *own_tol]
        asked = manifests.pod_requests({"spec": {"containers": [manifests.task_container(run, 0)]}})
        eligible = [n for n in self.nodes if n.ready and n.fits(sel, tol)]
        taken: list[Node] = []
        for _ in range(run.pods):
            node = next((n for n in eligible if n.cpu - n.used_cpu >= asked["cpu"] - 1e-9
                         and n.gpu - n.used_gpu >= asked["gpu"] - 1e-9), None)
            if node is None:
                for n in taken:
                    n.used_cpu -= asked["cpu"]
                    n.used_gpu -= asked["gpu"]
                what = f"{asked['gpu']:g} GPU(s)" if asked["gpu"] else f"{asked['cpu']:g} CPU(s)"
                return (f"waiting for room for all {run.pods} pod(s) of {what} each at once: {len(eligible)} node(s) "
                        f"of pool {pool} can take its pods, and {len(taken)} of its pods fit now")
            node.used_cpu += asked["cpu"]
            node.used_gpu += asked["gpu"]
            taken.append(node)
        return None


def capacity(m: Master, raw_nodes: Sequence[Mapping[str, Any]], pods: Pods, pools: Sequence[str]) -> list[PoolCapacity]:
    """Each pool's nodes (those its pods may use), slots and slots used, and nodes that take new pods."""
    cfg = m.settings.cluster.kubernetes
    nodes = nodes_with_use(raw_nodes, pods)
    per_slot = cfg.cpu_request or 1.0
    out = []
    for pool in pools:
        sel, tol = placement(k8s_submit.pool_pod_spec(m, pool))
        mine = [n for n in nodes if n.fits(sel, tol)]
        if cfg.cpu_slots:
            total, used = sum(int(n.cpu // per_slot) for n in mine), sum(int(n.used_cpu // per_slot) for n in mine)
        else:
            total, used = sum(int(n.gpu) for n in mine), sum(int(n.used_gpu) for n in mine)
        out.append(PoolCapacity(pool, len(mine), total, used, sum(1 for n in mine if n.ready)))
    return out
