"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

`KubeApiDouble`: a real HTTP server on 127.0.0.1 that serves the few endpoints Stalwart's Kubernetes resource
manager uses (nodes, namespaces, pods and their logs, secrets, batch/v1 jobs, watches) with the real API's
semantics, and runs each scheduled pod's first container as a real local process, so that trials really
train. Images are never pulled or used (only recorded), there is no networking, no RBAC beyond one bearer
token, no admission webhooks, no PATCH/PUT, no paging (`limit`/`continue` are ignored: a list is whole).
A kubeconfig for the official `kubernetes` client is written on `start()`.
"""

from __future__ import annotations

import pathlib
import secrets
import threading
from collections.abc import Mapping

from stalwart.testing.k8s_api_double.api import KubeApi
from stalwart.testing.k8s_api_double.calls import CallJournal, RecordedCall
from stalwart.testing.k8s_api_double.cluster import ClusterLoop
from stalwart.testing.k8s_api_double.objects import JsonObject
from stalwart.testing.k8s_api_double.scheduler import NodeSpec
from stalwart.testing.k8s_api_double.server import ApiHttpServer
from stalwart.testing.k8s_api_double.store import ObjectStore

_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: k8s-api-double
  cluster:
    server: {url}
users:
- name: k8s-api-double-user
  user:
    token: {token}
contexts:
- name: k8s-api-double
  context:
    cluster: k8s-api-double
    user: k8s-api-double-user
    namespace: default
current-context: k8s-api-double
"""


class KubeApiDouble:
    """The TEST DOUBLE of a Kubernetes API server (with scheduler, Job controller and process "kubelet")."""

    def __init__(
        self,
        workdir: pathlib.Path,
        nodes: list[NodeSpec] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ):
        self.workdir = pathlib.Path(workdir)
        self.token = secrets.token_urlsafe(24)
        self._store = ObjectStore()
        self._journal = CallJournal()
        self._initial_nodes = list(nodes) if nodes is not None else [NodeSpec("node-a", cpu=8, gpus=0)]
        self._extra_env = dict(extra_env or {})
        self._server: ApiHttpServer | None = None
        self._cluster: ClusterLoop | None = None
        self._serving: threading.Thread | None = None
        self._stopped = False

    def start(self) -> KubeApiDouble:
        """Bind 127.0.0.1:<free port>, write the kubeconfig and start the control loop."""
        if self._server is not None:
            return self
        self.workdir.mkdir(parents=True, exist_ok=True)
        cluster = ClusterLoop(self._store, self.workdir, self._initial_nodes, self._extra_env, 0)
        server = ApiHttpServer(KubeApi(self._store, cluster), self._store, self._journal, self.token)
        cluster.kubelet.api_port = server.server_address[1]
        self._server, self._cluster = server, cluster
        self.kubeconfig.write_text(_KUBECONFIG.format(url=self.url, token=self.token))
        self.kubeconfig.chmod(0o600)
        self._serving = threading.Thread(target=server.serve_forever, name="k8s-double-http", daemon=True)
        self._serving.start()
        cluster.start()
        return self

    def stop(self) -> None:
        """Kill every pod process (whole process groups) and stop the server; idempotent."""
        if self._server is None or self._stopped:
            return
        self._stopped = True
        self._server.stopping.set()
        with self._store.changed:
            self._store.changed.notify_all()
        self._cluster_loop().stop()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> KubeApiDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _http(self) -> ApiHttpServer:
        if self._server is None:
            raise RuntimeError("the Kubernetes API double is not started: call start() first")
        return self._server

    def _cluster_loop(self) -> ClusterLoop:
        if self._cluster is None:
            raise RuntimeError("the Kubernetes API double is not started: call start() first")
        return self._cluster

    @property
    def url(self) -> str:
        host, port = self._http().server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.workdir / "kubeconfig.yaml"

    @property
    def calls(self) -> list[RecordedCall]:
        return list(self._journal.calls)

    def pods(self, namespace: str | None = None) -> list[JsonObject]:
        return self._store.list("pods", namespace)[0]

    def evict(self, namespace: str, pod_name: str, message: str = "The node was low on resource: memory.") -> None:
        """As the kubelet's eviction: SIGTERM, SIGKILL after the grace period (at most 10 s); Failed, Evicted."""
        self._cluster_loop().evict(namespace, pod_name, message)

    def expire_history(self) -> None:
        """Compaction: every watch (and list-then-watch) from an earlier resourceVersion gets 410 Gone."""
        self._store.expire_history()

    def fail_next(self, verb: str, resource: str, status: int = 500, times: int = 1) -> None:
        """Answer the next `times` calls of `verb` on `resource` (e.g. "pods", "pods/log") with a `status` Status."""
        self._journal.fail_next(verb, resource, status, times)

    def add_node(self, node: NodeSpec) -> None:
        self._cluster_loop().add_node(node)

    def remove_node(self, name: str) -> None:
        """The node goes away and the pods bound to it are force-deleted (their processes killed)."""
        self._cluster_loop().remove_node(name)
