"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

The double's API operations, one method per (resource, verb) it serves: discovery, nodes, namespaces, pods
(and their logs), secrets and batch/v1 jobs. Each answers a `Reply` (JSON, text, a log follow or a watch
stream) or raises `ApiError`; `server.py` turns these into HTTP. Everything else is a 404 there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stalwart.testing.k8s_api_double.admission import admit_job, admit_pod, admit_secret
from stalwart.testing.k8s_api_double.cluster import ClusterLoop
from stalwart.testing.k8s_api_double.objects import ApiError, JsonObject, Selector, success_status
from stalwart.testing.k8s_api_double.store import ObjectStore

KINDS = {"pods": ("Pod", "v1"), "secrets": ("Secret", "v1"), "nodes": ("Node", "v1"), "jobs": ("Job", "batch/v1")}


@dataclass(frozen=True)
class Request:
    """One parsed API request."""

    method: str
    group: str
    namespace: str | None
    resource: str
    name: str | None
    subresource: str | None
    verb: str
    query: dict[str, str]
    body: Any


@dataclass(frozen=True)
class JsonReply:
    code: int
    body: JsonObject


@dataclass(frozen=True)
class TextReply:
    code: int
    text: str


@dataclass(frozen=True)
class LogFollowReply:
    """Stream a pod's log file while its process runs."""

    uid: str
    tail_lines: int | None


@dataclass(frozen=True)
class WatchReply:
    resource: str
    namespace: str | None
    selector: Selector
    resource_version: str | None
    timeout_seconds: float
    bookmarks: bool


Reply = JsonReply | TextReply | LogFollowReply | WatchReply
Operation = Callable[[Request], Reply]


def flag(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


class KubeApi:
    """The operations; `operation(request)` finds the one for a request, or None (404)."""

    def __init__(self, store: ObjectStore, cluster: ClusterLoop, max_watch_seconds: float = 1800.0):
        self.store = store
        self.cluster = cluster
        self.max_watch_seconds = max_watch_seconds
        self._table: dict[tuple[str, str, str, bool], Operation] = {
            ("", "nodes", "list", False): self._list,
            ("", "nodes", "watch", False): self._list,
            ("", "nodes", "get", False): self._get,
            ("", "namespaces", "get", False): self._get_namespace,
            ("", "pods", "list", False): self._list,
            ("", "pods", "watch", False): self._list,
            ("", "pods", "list", True): self._list,
            ("", "pods", "watch", True): self._list,
            ("", "pods", "create", True): self._create,
            ("", "pods", "get", True): self._get,
            ("", "pods", "delete", True): self._delete_pod,
            ("", "pods/log", "get", True): self._pod_log,
            ("", "pods/status", "get", True): self._get,
            ("", "secrets", "list", True): self._list,
            ("", "secrets", "create", True): self._create,
            ("", "secrets", "get", True): self._get,
            ("", "secrets", "delete", True): self._delete_secret,
            ("", "secrets", "deletecollection", True): self._delete_collection,
            ("batch", "jobs", "list", False): self._list,
            ("batch", "jobs", "watch", False): self._list,
            ("batch", "jobs", "list", True): self._list,
            ("batch", "jobs", "watch", True): self._list,
            ("batch", "jobs", "create", True): self._create,
            ("batch", "jobs", "get", True): self._get,
            ("batch", "jobs/status", "get", True): self._get,
            ("batch", "jobs", "delete", True): self._delete_job,
            ("batch", "jobs", "deletecollection", True): self._delete_collection,
        }

    def knows(self, group: str, resource: str) -> bool:
        return any(key[0] == group and key[1] == resource for key in self._table)

    def operation(self, request: Request) -> Operation | None:
        resource = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
        namespaced = request.namespace is not None and request.resource != "namespaces"
        return self._table.get((request.group, resource, request.verb, namespaced))

    def _list(self, request: Request) -> Reply:
        selector = Selector(request.query.get("labelSelector"), request.query.get("fieldSelector"))
        if request.verb == "watch":
            timeout = float(request.query.get("timeoutSeconds") or self.max_watch_seconds)
            return WatchReply(
                request.resource, request.namespace, selector, request.query.get("resourceVersion"),
                min(timeout, self.max_watch_seconds), flag(request.query.get("allowWatchBookmarks")),
            )  # fmt: skip
        items, revision = self.store.list(request.resource, request.namespace, selector, copies=False)
        kind, api_version = KINDS[request.resource]
        body = {"kind": f"{kind}List", "apiVersion": api_version, "metadata": {"resourceVersion": str(revision)}}
        return JsonReply(200, {**body, "items": items})

    def _get(self, request: Request) -> Reply:
        assert request.name is not None
        return JsonReply(200, self.store.get(request.resource, request.namespace or "", request.name, request.group))

    def _get_namespace(self, request: Request) -> Reply:
        namespace = {
            "kind": "Namespace",
            "apiVersion": "v1",
            "metadata": {"name": request.name, "labels": {"kubernetes.io/metadata.name": request.name}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        return JsonReply(200, namespace)

    def _create(self, request: Request) -> Reply:
        namespace = request.namespace or ""
        admit = {"pods": admit_pod, "secrets": admit_secret, "jobs": admit_job}[request.resource]
        obj = admit(request.body, namespace)
        if flag(request.query.get("dryRun")) or request.query.get("dryRun") == "All":
            return JsonReply(201, obj)
        with self.store.lock:
            return JsonReply(201, self.store.create(request.resource, namespace, obj, request.group))

    def _delete_pod(self, request: Request) -> Reply:
        assert request.namespace is not None and request.name is not None
        grace = _delete_option(request, "gracePeriodSeconds")
        pod = self.cluster.delete_pod(request.namespace, request.name, None if grace is None else float(grace))
        return JsonReply(200, pod)

    def _delete_secret(self, request: Request) -> Reply:
        assert request.namespace is not None and request.name is not None
        with self.store.lock:
            secret = self.store.get("secrets", request.namespace, request.name)
            self.store.remove("secrets", request.namespace, request.name)
        return JsonReply(200, success_status(request.name, "secrets", "", secret["metadata"]["uid"]))

    def _delete_job(self, request: Request) -> Reply:
        assert request.namespace is not None and request.name is not None
        policy = _delete_option(request, "propagationPolicy")
        with self.store.lock:
            jobs = self.cluster.jobs
            answer = jobs.delete_job(request.namespace, request.name, None if policy is None else str(policy))
        return JsonReply(200, answer)

    def _delete_collection(self, request: Request) -> Reply:
        assert request.namespace is not None
        selector = Selector(request.query.get("labelSelector"), request.query.get("fieldSelector"))
        kind, api_version = KINDS[request.resource]
        with self.store.lock:
            items, _ = self.store.list(request.resource, request.namespace, selector, copies=False)
            for item in items:
                if request.resource == "jobs":
                    policy = _delete_option(request, "propagationPolicy")
                    self.cluster.jobs.delete_job(request.namespace, item["metadata"]["name"], policy)
                else:
                    self.store.remove(request.resource, request.namespace, item["metadata"]["name"])
            revision = self.store.revision
        body = {"kind": f"{kind}List", "apiVersion": api_version, "metadata": {"resourceVersion": str(revision)}}
        return JsonReply(200, {**body, "items": items})

    def _pod_log(self, request: Request) -> Reply:
        assert request.namespace is not None and request.name is not None
        pod = self.store.get("pods", request.namespace, request.name)
        container = pod["spec"]["containers"][0]
        asked = request.query.get("container") or container["name"]
        names = [c["name"] for c in pod["spec"]["containers"]]
        if asked not in names:
            raise ApiError(400, f"container {asked} is not valid for pod {request.name}", "BadRequest")
        uid = pod["metadata"]["uid"]
        log_path = self.cluster.kubelet.log_paths.get(uid)
        if asked != container["name"] or log_path is None:
            waiting = _waiting_reason(pod)
            message = f'container "{asked}" in pod "{request.name}" is waiting to start: {waiting}'
            raise ApiError(400, message, "BadRequest")
        tail = request.query.get("tailLines")
        tail_lines = int(tail) if tail else None
        if flag(request.query.get("follow")):
            return LogFollowReply(uid, tail_lines)
        return TextReply(200, read_log(log_path.read_bytes(), tail_lines))


def read_log(data: bytes, tail_lines: int | None) -> str:
    text = data.decode("utf-8", errors="replace")
    if tail_lines is None:
        return text
    lines = text.splitlines(keepends=True)
    return "".join(lines[-tail_lines:]) if tail_lines > 0 else ""


def _waiting_reason(pod: JsonObject) -> str:
    for status in pod["status"].get("containerStatuses") or []:
        waiting = status.get("state", {}).get("waiting")
        if waiting:
            return str(waiting.get("reason", "ContainerCreating"))
    return "ContainerCreating"


def _delete_option(request: Request, key: str) -> Any:
    """A DeleteOptions field from the query or the body (the query wins, as on the real server)."""
    if key in request.query:
        return request.query[key]
    if isinstance(request.body, dict):
        return request.body.get(key)
    return None
