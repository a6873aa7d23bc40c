"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

Pod placement in the double, a small stand-in for kube-scheduler: a pod goes to the first Ready node whose
labels match its `nodeSelector`, whose NoSchedule/NoExecute taints its tolerations tolerate, and whose free
allocatable cpu, memory and `nvidia.com/gpu` cover its requests. An unplaceable pod gets the scheduler's
"0/N nodes are available: ..." message. No affinity, priorities or preemption.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stalwart.testing.k8s_api_double.objects import JsonObject, now_timestamp, parse_quantity

GPU = "nvidia.com/gpu"
RESOURCE_NAMES = ("cpu", "memory", GPU)
TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class NodeSpec:
    """One node of the double's cluster: its allocatable resources, labels and taints."""

    name: str
    cpu: int
    gpus: int = 0
    memory_gib: int = 16
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)

    def allocatable(self) -> dict[str, float]:
        return {"cpu": float(self.cpu), "memory": float(self.memory_gib * 2**30), GPU: float(self.gpus)}


def node_object(node: NodeSpec) -> JsonObject:
    """The Node object the API serves for a NodeSpec (capacity = allocatable, Ready)."""
    resources = {"cpu": str(node.cpu), "memory": f"{node.memory_gib}Gi", "pods": "110"}
    if node.gpus > 0:
        resources[GPU] = str(node.gpus)
    labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", **node.labels}
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status (test double)",
        "lastHeartbeatTime": now_timestamp(),
        "lastTransitionTime": now_timestamp(),
    }
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": node.name, "labels": labels},
        "spec": {"taints": [dict(t) for t in node.taints]} if node.taints else {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [ready],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": node.name}],
            "nodeInfo": _node_info(),
        },
    }


def _node_info() -> JsonObject:
    empty = ("bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion", "machineID", "osImage")
    info: JsonObject = {key: "" for key in empty}
    info.update({"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.30.0-double"})
    info["systemUUID"] = ""
    return info


def pod_requests(pod: JsonObject) -> dict[str, float]:
    """The sum of the containers' requests (a limit stands in for a missing request, as in Kubernetes)."""
    total = dict.fromkeys(RESOURCE_NAMES, 0.0)
    for container in pod.get("spec", {}).get("containers", []):
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name in RESOURCE_NAMES:
            if name in asked:
                total[name] += parse_quantity(asked[name])
    return total


def tolerates(tolerations: Iterable[JsonObject], taint: JsonObject) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        operator = toleration.get("operator", "Equal")
        if operator == "Exists" and (not toleration.get("key") or toleration["key"] == taint.get("key")):
            return True
        same_key = toleration.get("key") == taint.get("key")
        if operator == "Equal" and same_key and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


class Placement:
    """One scheduling decision over the nodes and the pods already bound to them."""

    def __init__(self, nodes: list[NodeSpec], bound_pods: list[JsonObject]):
        self.nodes = nodes
        self.free = {node.name: node.allocatable() for node in nodes}
        for pod in bound_pods:
            self.reserve(pod, pod["spec"]["nodeName"])

    def reserve(self, pod: JsonObject, node_name: str) -> None:
        if node_name not in self.free:
            return
        for name, amount in pod_requests(pod).items():
            self.free[node_name][name] -= amount

    def choose(self, pod: JsonObject) -> tuple[str | None, str]:
        """The node for `pod`, or None and the scheduler's message saying why no node fits."""
        reasons: Counter[str] = Counter()
        for node in self.nodes:
            problems = self._problems(node, pod)
            if not problems:
                return node.name, ""
            reasons.update(problems)
        summary = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        if not self.nodes:
            return None, "no nodes available to schedule pods"
        message = f"0/{len(self.nodes)} nodes are available: {summary}."
        message += f" preemption: 0/{len(self.nodes)} nodes are available: "
        message += f"{len(self.nodes)} Preemption is not helpful for scheduling."
        return None, message

    def _problems(self, node: NodeSpec, pod: JsonObject) -> list[str]:
        spec = pod.get("spec", {})
        labels = {"kubernetes.io/hostname": node.name, **node.labels}
        selector = spec.get("nodeSelector") or {}
        if any(labels.get(key) != value for key, value in selector.items()):
            return ["node(s) didn't match Pod's node affinity/selector"]
        for taint in node.taints:
            hard = taint.get("effect") in ("NoSchedule", "NoExecute")
            if hard and not tolerates(spec.get("tolerations") or [], taint):
                shown = f"{taint.get('key')}: {taint.get('value')}" if taint.get("value") else taint.get("key")
                return [f"node(s) had untolerated taint {{{shown}}}"]
        asked = pod_requests(pod)
        free = self.free[node.name]
        return [f"Insufficient {name}" for name in RESOURCE_NAMES if asked[name] > free[name] + 1e-9]
