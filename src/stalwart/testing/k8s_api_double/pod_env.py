"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

What the double's "kubelet" gives a container process: its argv (Kubernetes semantics: `command` replaces the
image's entrypoint, `args` follow it, `$(VAR)` expands from the container's environment) and its environment
(`env[].value`, `valueFrom.secretKeyRef`, `valueFrom.fieldRef`, `envFrom[].secretRef`, `HOSTNAME`). The image is
never pulled or run, so its entrypoint is unknown: a container without `command` runs its `args` alone.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping

from stalwart.testing.k8s_api_double.objects import JsonObject
from stalwart.testing.k8s_api_double.store import ObjectStore

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class ContainerConfigError(Exception):
    """The container cannot start yet (a missing secret or key): the kubelet's CreateContainerConfigError."""


class ContainerStartError(Exception):
    """The container can never start (no command to run): the pod fails."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: known variables are replaced, `$$` is a literal `$`, others stay."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _REFERENCE.sub(replace, text)


def container_argv(container: JsonObject, env: Mapping[str, str]) -> list[str]:
    command = [str(part) for part in container.get("command") or []]
    args = [str(part) for part in container.get("args") or []]
    if not command and not args:
        raise ContainerStartError(
            f'container "{container.get("name")}" has no command: the Kubernetes API test double does not pull '
            f'or run images (image "{container.get("image")}"), so it cannot know the image\'s entrypoint; '
            "set spec.containers[0].command"
        )
    return [expand(part, env) for part in command + args]


def container_environment(
    store: ObjectStore, pod: JsonObject, container: JsonObject, extra_env: Mapping[str, str], api_port: int
) -> dict[str, str]:
    """The process environment: a container's base, then `extra_env`, then the container's own variables."""
    metadata = pod["metadata"]
    env = {
        "PATH": DEFAULT_PATH,
        "HOME": os.path.expanduser("~"),
        "HOSTNAME": metadata["name"],
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(api_port),
    }
    env.update(extra_env)
    for source in container.get("envFrom") or []:
        env.update(_from_source(store, metadata["namespace"], source))
    for variable in container.get("env") or []:
        value = _variable_value(store, pod, variable, env)
        if value is not None:
            env[variable["name"]] = value
    return env


def _from_source(store: ObjectStore, namespace: str, source: JsonObject) -> dict[str, str]:
    reference = source.get("secretRef")
    if reference is None:
        raise ContainerConfigError("envFrom supports only secretRef in the Kubernetes API test double")
    secret = store.find("secrets", namespace, reference.get("name", ""))
    if secret is None:
        if reference.get("optional"):
            return {}
        raise ContainerConfigError(f'secret "{reference.get("name")}" not found')
    prefix = source.get("prefix", "")
    return {prefix + key: _decode(value) for key, value in (secret.get("data") or {}).items()}


def _variable_value(store: ObjectStore, pod: JsonObject, variable: JsonObject, env: Mapping[str, str]) -> str | None:
    if "value" in variable or "valueFrom" not in variable:
        return expand(str(variable.get("value", "")), env)
    source = variable["valueFrom"]
    if "secretKeyRef" in source:
        return _secret_value(store, pod["metadata"]["namespace"], source["secretKeyRef"])
    if "fieldRef" in source:
        return _field_value(pod, source["fieldRef"].get("fieldPath", ""))
    raise ContainerConfigError(
        f'env "{variable.get("name")}": only value, secretKeyRef and fieldRef are supported by the test double'
    )


def _secret_value(store: ObjectStore, namespace: str, reference: JsonObject) -> str | None:
    name, key = reference.get("name", ""), reference.get("key", "")
    secret = store.find("secrets", namespace, name)
    if secret is None:
        if reference.get("optional"):
            return None
        raise ContainerConfigError(f'secret "{name}" not found')
    data = secret.get("data") or {}
    if key not in data:
        if reference.get("optional"):
            return None
        raise ContainerConfigError(f"couldn't find key {key} in Secret {namespace}/{name}")
    return _decode(data[key])


def _decode(value: str) -> str:
    return base64.b64decode(value).decode("utf-8", errors="replace")


def _field_value(pod: JsonObject, path: str) -> str:
    metadata, spec, status = pod["metadata"], pod.get("spec", {}), pod.get("status", {})
    fields = {
        "metadata.name": metadata.get("name", ""),
        "metadata.namespace": metadata.get("namespace", ""),
        "metadata.uid": metadata.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": status.get("podIP", "127.0.0.1"),
        "status.hostIP": status.get("hostIP", "127.0.0.1"),
    }
    label = re.match(r"^metadata\.labels\['(.+)'\]$", path)
    if label:
        return str((metadata.get("labels") or {}).get(label.group(1), ""))
    if path not in fields:
        raise ContainerConfigError(f'fieldRef "{path}" is not supported by the Kubernetes API test double')
    return str(fields[path])
