"""The few Kubernetes API calls the manager makes, through the official `kubernetes` client, on plain dicts.

Connects with `resource_manager.kubeconfig` (and `kube_context`) where given, else inside a cluster with the pod's
service account (`KUBERNETES_SERVICE_HOST` set), else the default kubeconfig (`KUBECONFIG`, ~/.kube/config). Lists
and watches are read undeserialized (JSON dicts, not the client's models: a thousand pods in milliseconds). Every
failure is a `KubeError` with the API's status code (0: the API could not be reached) and its message.

The calls, and the RBAC verbs they need (deploy/kubernetes/role.yaml grants exactly these; api-calls.txt there is the
recorded list): nodes list; pods list, watch; pods/log get; jobs create, delete (their pods go with them); secrets
create, delete."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from stalwart.config.kubernetes import KubernetesConfig


class KubeError(Exception):
    """A Kubernetes API call failed: `status` is the HTTP status (0 when the API was not reached)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _connect(cfg: KubernetesConfig) -> Any:
    try:
        from kubernetes import client, config
    except ImportError as err:
        raise KubeError(0, "the Kubernetes resource manager needs the `kubernetes` package: pip install "
                           "'stalwart[kubernetes]'") from err

    try:
        if cfg.kubeconfig:
            return config.new_client_from_config(config_file=cfg.kubeconfig, context=cfg.kube_context)
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            conf = client.Configuration()
            config.load_incluster_config(client_configuration=conf)
            return client.ApiClient(conf)
        return config.new_client_from_config(context=cfg.kube_context)
    except (config.ConfigException, OSError, TypeError) as err:
        raise KubeError(0, f"cannot reach the Kubernetes API: {err} (set resource_manager.kubeconfig to a kubeconfig "
                           "file, or run the master in the cluster with a service account)") from err


class KubeApi:
    """One connection to the API (its pool of HTTP connections), shared by the master's passes."""

    def __init__(self, cfg: KubernetesConfig) -> None:
        from kubernetes import client

        self.api_client = _connect(cfg)
        self.core = client.CoreV1Api(self.api_client)
        self.batch = client.BatchV1Api(self.api_client)

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn(*args, **kwargs)
        except ApiException as err:
            raise KubeError(int(err.status or 0), _message(err)) from err
        except (HTTPError, OSError) as err:
            raise KubeError(0, f"the Kubernetes API did not answer: {err}") from err

    def _raw(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        resp = self._call(fn, *args, _preload_content=False, **kwargs)
        return json.loads(resp.data)

    # -- reads --------------------------------------------------------------------------------------------------------
    def nodes(self) -> list[dict[str, Any]]:
        return list(self._raw(self.core.list_node).get("items") or [])

    def pods(self, namespace: str, selector: str) -> tuple[list[dict[str, Any]], str]:
        """The pods matching `selector`, and the list's resourceVersion (where a watch goes on from)."""
        got = self._raw(self.core.list_namespaced_pod, namespace, label_selector=selector)
        return list(got.get("items") or []), str((got.get("metadata") or {}).get("resourceVersion") or "")

    def watch_pods(self, namespace: str, selector: str, resource_version: str,
                   timeout_s: int) -> Iterator[dict[str, Any]]:
        """Pod events after `resource_version` ({type, object} dicts, BOOKMARKs included), as the API streams them
        (the client's watch call, read line by line). A history the server no longer has (an ERROR event with
        410 Gone) is `KubeError(410)`: list again."""
        from kubernetes.watch.watch import iter_resp_lines

        resp = self._call(self.core.list_namespaced_pod, namespace, label_selector=selector, watch=True,
                          resource_version=resource_version, timeout_seconds=timeout_s, allow_watch_bookmarks=True,
                          _preload_content=False)
        from urllib3.exceptions import HTTPError

        try:
            for line in iter_resp_lines(resp):
                if not line or not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise KubeError(int(status.get("code") or 500), str(status.get("message") or status))
                yield event
        except (HTTPError, OSError) as err:
            raise KubeError(0, f"the Kubernetes API's watch broke off: {err}") from err
        finally:
            resp.close()
            resp.release_conn()

    def pod_log_tail(self, namespace: str, name: str, lines: int = 15) -> str:
        try:
            return str(self._call(self.core.read_namespaced_pod_log, name, namespace, tail_lines=lines))
        except KubeError:
            return ""

    # -- writes -------------------------------------------------------------------------------------------------------
    def create_job(self, namespace: str, body: dict[str, Any]) -> None:
        self._call(self.batch.create_namespaced_job, namespace, body, _preload_content=False)

    def delete_job(self, namespace: str, name: str, grace_s: int | None = None) -> None:
        """The Job and its pods (SIGTERM, then SIGKILL after the grace period); one already gone is fine."""
        try:
            self._call(self.batch.delete_namespaced_job, name, namespace, propagation_policy="Background",
                       grace_period_seconds=grace_s, _preload_content=False)
        except KubeError as err:
            if err.status != 404:
                raise

    def create_secret(self, namespace: str, body: dict[str, Any]) -> None:
        """Created; one left by an earlier try of the same run is replaced."""
        try:
            self._call(self.core.create_namespaced_secret, namespace, body, _preload_content=False)
        except KubeError as err:
            if err.status != 409:
                raise
            self.delete_secret(namespace, body["metadata"]["name"])
            self._call(self.core.create_namespaced_secret, namespace, body, _preload_content=False)

    def delete_secret(self, namespace: str, name: str) -> None:
        try:
            self._call(self.core.delete_namespaced_secret, name, namespace, _preload_content=False)
        except KubeError as err:
            if err.status != 404:
                raise

    def close(self) -> None:
        self.api_client.close()


def _message(err: Any) -> str:
    """The Status object's message where the API sent one, else the reason."""
    try:
        body = json.loads(err.body or "{}")
    except (TypeError, ValueError):
        body = {}
    return str(body.get("message") or err.reason or f"HTTP {err.status}")
