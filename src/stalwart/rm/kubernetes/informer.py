"""A pod informer: one namespace's pods of this master (a label selector), listed once and then kept current by a
watch, in memory, as the Kubernetes client-go informers do.

A thread lists the pods (the list's resourceVersion is where the watch starts), then watches from the last
resourceVersion seen (pods' own and BOOKMARKs'). A watch that ends (its timeout) is started again from there; one
answered 410 Gone (the server compacted that history) lists again, replacing the whole cache, so no change is lost
however many events were: the cache is the list's truth, and the events after it. Any other failure lists again
after a pause. `on_change` is called after each batch of changes (the master runs its pass sooner).

`ready` is set once the first list is in; `snapshot()` copies the cache (pod name -> pod dict)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from stalwart.rm.kubernetes.client import KubeApi, KubeError

log = logging.getLogger(__name__)
WATCH_TIMEOUT_S = 30
RETRY_S = 1.0


class PodInformer:
    """The pods of `namespace` matching `selector`, kept current by a daemon thread (`start`, `stop`)."""

    def __init__(self, api: KubeApi, namespace: str, selector: str,
                 on_change: Callable[[], None] | None = None) -> None:
        self.api, self.namespace, self.selector = api, namespace, selector
        self.on_change = on_change or (lambda: None)
        self._pods: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.ready = threading.Event()
        self.resource_version = ""
        self.relists = 0  # lists after the first (410 Gone, errors): what the tests and `describe` look at
        self.error: str | None = None  # the last failure, until a list succeeds again
        self._thread: threading.Thread | None = None

    def start(self) -> PodInformer:
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"k8s-pods-{self.namespace}")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return dict(self._pods)

    def wait_ready(self, timeout: float) -> bool:
        return self.ready.wait(timeout)

    def relist(self) -> None:
        """List the pods now, replacing the cache (what a 410 Gone, or a failed watch, leads to)."""
        pods, version = self.api.pods(self.namespace, self.selector)
        with self._lock:
            self._pods = {p["metadata"]["name"]: p for p in pods}
            self.resource_version = version
        self.error = None
        self.ready.set()

    def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            try:
                if first or not self.resource_version:
                    self.relist()
                    self.on_change()
                first = False
                self._watch()
            except KubeError as err:
                self.error = str(err)
                first = True
                self.relists += 1
                if err.status == 410:
                    log.info("pod watch in %s: history gone (410); listing again", self.namespace)
                    continue
                log.warning("pod watch in %s failed (%s); listing again in %.0f s", self.namespace, err, RETRY_S)
                self._stop.wait(RETRY_S)

    def _watch(self) -> None:
        for event in self.api.watch_pods(self.namespace, self.selector, self.resource_version, WATCH_TIMEOUT_S):
            if self._stop.is_set():
                return
            self._apply(event)

    def _apply(self, event: dict[str, Any]) -> None:
        kind, pod = event.get("type"), event.get("object") or {}
        meta = pod.get("metadata") or {}
        version = str(meta.get("resourceVersion") or "")
        with self._lock:
            if kind in ("ADDED", "MODIFIED"):
                self._pods[meta["name"]] = pod
            elif kind == "DELETED":
                self._pods.pop(str(meta.get("name")), None)
            if version:
                self.resource_version = version
        if kind != "BOOKMARK":
            self.on_change()
