"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

The double's control loop, standing in for kube-scheduler, the Job controller, the pod garbage collector and
the kubelets of every node: every 50 ms, under the store's lock, it places pending pods, runs and watches
their processes, reconciles Jobs, removes deleted pods once their processes are gone, and collects the
garbage (objects whose owners are gone). Also the pod
DELETE semantics (graceful unless the pod is unbound or ended, as the real server decides) and nodes.
"""

from __future__ import annotations

import logging
import pathlib
import threading
from collections.abc import Callable, Mapping

from stalwart.testing.k8s_api_double.jobs import JobController
from stalwart.testing.k8s_api_double.objects import ApiError, JsonObject, now_timestamp
from stalwart.testing.k8s_api_double.pods import Kubelet
from stalwart.testing.k8s_api_double.scheduler import TERMINAL_PHASES, NodeSpec, Placement, node_object
from stalwart.testing.k8s_api_double.store import ObjectStore

_log = logging.getLogger(__name__)
TICK_SECONDS = 0.05
OWNER_KINDS = {"Pod": "pods", "Job": "jobs", "Secret": "secrets"}


class ClusterLoop:
    """Nodes, the scheduler, the kubelet and the Job controller, driven by one background thread."""

    def __init__(
        self,
        store: ObjectStore,
        workdir: pathlib.Path,
        nodes: list[NodeSpec],
        extra_env: Mapping[str, str],
        api_port: int,
    ):
        self.store = store
        self.nodes: list[NodeSpec] = []
        self.kubelet = Kubelet(store, workdir, extra_env, api_port)
        self.jobs = JobController(store, self.delete_pod)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="k8s-double-cluster", daemon=True)
        for node in nodes:
            self.add_node(node)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        with self.store.lock:
            self.kubelet.stop_all()

    def _run(self) -> None:
        while not self._stopping.wait(TICK_SECONDS):
            with self.store.lock:
                try:
                    self.sync()
                except Exception:  # a bug of the double must not stop its cluster: say it and go on
                    _log.exception("the Kubernetes API test double's control loop failed a pass")

    def sync(self) -> None:
        """One pass of every controller (the caller holds the store's lock)."""
        self._schedule(self._all("pods"))
        self.kubelet.sync(self._all("pods"), {node.name for node in self.nodes})
        self.kubelet.reap_orphans({p["metadata"]["uid"] for p in self._all("pods")})
        self.jobs.sync(self._all("jobs"), self._all("pods"))
        self._collect_garbage()

    def _all(self, resource: str) -> list[JsonObject]:
        """Every stored object of `resource`, to read only."""
        return self.store.list(resource, None, copies=False)[0]

    def _collect_garbage(self) -> None:
        """The garbage collector: a pod, job or secret whose owners (of kinds the double serves) are all gone is
        deleted, as the real one does in Background propagation."""
        objects = [(resource, obj) for resource in OWNER_KINDS.values() for obj in self._all(resource)]
        uids = {obj["metadata"]["uid"] for _, obj in objects}
        for resource, obj in objects:
            metadata = obj["metadata"]
            owners = [r for r in metadata.get("ownerReferences") or [] if r.get("kind") in OWNER_KINDS]
            if not owners or any(r.get("uid") in uids for r in owners) or metadata.get("deletionTimestamp"):
                continue
            if resource == "pods":
                self.delete_pod(metadata["namespace"], metadata["name"], None)
            elif resource == "jobs":
                self.jobs.delete_job(metadata["namespace"], metadata["name"], "Background")
            else:
                self.store.remove(resource, metadata["namespace"], metadata["name"])

    def _schedule(self, pods: list[JsonObject]) -> None:
        waiting = [
            pod
            for pod in pods
            if not pod["spec"].get("nodeName")
            and pod["status"].get("phase") not in TERMINAL_PHASES
            and not pod["metadata"].get("deletionTimestamp")
        ]
        if not waiting:
            return
        bound = [p for p in pods if p["spec"].get("nodeName") and p["status"].get("phase") not in TERMINAL_PHASES]
        placement = Placement(self.nodes, bound)
        for pod in waiting:
            node_name, message = placement.choose(pod)
            metadata = pod["metadata"]
            if node_name is None:
                if _unschedulable_message(pod) == message:
                    continue
                self.store.update("pods", metadata["namespace"], metadata["name"], _unschedulable(message))
                continue
            placement.reserve(pod, node_name)
            self.store.update("pods", metadata["namespace"], metadata["name"], _bind(node_name))

    def delete_pod(self, namespace: str, name: str, grace_seconds: float | None) -> JsonObject:
        """DELETE of a pod: at once when unbound or ended or grace 0, else graceful (the kubelet ends it).

        Returns the pod as the API answers it (its last state when it was removed at once)."""
        with self.store.lock:
            pod = self.store.get("pods", namespace, name)
            metadata = pod["metadata"]
            if metadata.get("deletionTimestamp"):
                return pod
            grace = pod["spec"].get("terminationGracePeriodSeconds", 30) if grace_seconds is None else grace_seconds
            if grace < 0:
                raise ApiError(422, f"gracePeriodSeconds must be >= 0, got {grace}", "Invalid")
            immediate = not pod["spec"].get("nodeName") or pod["status"].get("phase") in TERMINAL_PHASES
            if immediate or grace == 0:
                return self.store.remove("pods", namespace, name) or pod

            def mark(current: JsonObject) -> None:
                current["metadata"]["deletionTimestamp"] = now_timestamp()
                current["metadata"]["deletionGracePeriodSeconds"] = int(grace)

            return self.store.update("pods", namespace, name, mark)

    def add_node(self, node: NodeSpec) -> None:
        with self.store.lock:
            if any(existing.name == node.name for existing in self.nodes):
                raise ValueError(f"node {node.name!r} already exists in the Kubernetes API double")
            self.nodes.append(node)
            self.store.create("nodes", "", node_object(node))

    def remove_node(self, name: str) -> None:
        """The node goes away; the pod garbage collector force-deletes the pods bound to it."""
        with self.store.lock:
            if not any(node.name == name for node in self.nodes):
                raise ValueError(f"no node {name!r} in the Kubernetes API double")
            self.nodes = [node for node in self.nodes if node.name != name]
            self.store.remove("nodes", "", name)
            for pod in self._all("pods"):
                if pod["spec"].get("nodeName") == name:
                    self.store.remove("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])

    def evict(self, namespace: str, name: str, message: str) -> None:
        with self.store.lock:
            self.kubelet.evict(self.store.get("pods", namespace, name), message)


def _unschedulable_message(pod: JsonObject) -> str | None:
    conditions = pod["status"].get("conditions") or []
    return next((c.get("message") for c in conditions if c.get("reason") == "Unschedulable"), None)


def _unschedulable(message: str) -> Callable[[JsonObject], None]:
    def change(pod: JsonObject) -> None:
        conditions = pod["status"].setdefault("conditions", [])
        scheduled = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if scheduled is not None and scheduled.get("message") == message:
            return
        conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": now_timestamp(),
            }
        )

    return change


def _bind(node_name: str) -> Callable[[JsonObject], None]:
    def change(pod: JsonObject) -> None:
        pod["spec"]["nodeName"] = node_name
        conditions = [c for c in pod["status"].get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now_timestamp()})
        pod["status"]["conditions"] = conditions

    return change
