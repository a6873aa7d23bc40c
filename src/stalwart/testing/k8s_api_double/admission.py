"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

What the double's API server checks and fills in before storing a created Pod, Job or Secret: names (DNS-1123,
at most 63 characters for pods and jobs), containers, quantities, a Job's restartPolicy, and the defaults the
real server applies (Pending status, restartPolicy, grace period, a Job's selector and template labels,
a Secret's stringData folded into base64 data). Every problem is a 422 `Invalid` Status, as the real one.
"""

from __future__ import annotations

import base64
import binascii
import copy
import uuid

from stalwart.testing.k8s_api_double.objects import (
    ApiError,
    JsonObject,
    invalid,
    label_problems,
    name_problems,
    parse_quantity,
    random_suffix,
)

JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def _require_object(body: object, kind: str, namespace: str) -> JsonObject:
    if not isinstance(body, dict):
        raise ApiError(400, f"the body of the request must be a JSON {kind} object", "BadRequest")
    if body.get("kind") not in (None, kind):
        raise ApiError(400, f"the API version in the data does not match: kind {body.get('kind')!r}, want {kind}")
    given = (body.get("metadata") or {}).get("namespace")
    if given not in (None, "", namespace):
        message = f"the namespace of the provided object ({given}) does not match the namespace sent on the request"
        raise ApiError(400, message, "BadRequest")
    return copy.deepcopy(body)


def _named(obj: JsonObject, kind: str, max_length: int) -> str:
    metadata = obj.setdefault("metadata", {})
    if not metadata.get("name") and metadata.get("generateName"):
        metadata["name"] = str(metadata["generateName"])[: max_length - 5] + random_suffix()
    problems = name_problems(metadata.get("name"), max_length=max_length)
    if problems:
        raise invalid(kind, str(metadata.get("name") or ""), problems)
    return str(metadata["name"])


def pod_spec_problems(spec: object, field: str) -> list[str]:
    """What is wrong with a pod spec (containers, names, images, quantities)."""
    if not isinstance(spec, dict):
        return [f"{field}: Required value"]
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return [f"{field}.containers: Required value"]
    problems: list[str] = []
    for index, container in enumerate(containers):
        where = f"{field}.containers[{index}]"
        if not isinstance(container, dict):
            problems.append(f"{where}: Invalid value: must be an object")
            continue
        problems += label_problems(container.get("name"), f"{where}.name")
        if not container.get("image"):
            problems.append(f"{where}.image: Required value")
        problems += _quantity_problems(container, where)
    return problems


def _quantity_problems(container: JsonObject, where: str) -> list[str]:
    problems = []
    resources = container.get("resources") or {}
    for part in ("requests", "limits"):
        for name, value in (resources.get(part) or {}).items():
            try:
                parse_quantity(value)
            except ValueError as error:
                problems.append(f"{where}.resources.{part}[{name}]: Invalid value: {value!r}: {error}")
    return problems


def admit_pod(body: object, namespace: str) -> JsonObject:
    pod = _require_object(body, "Pod", namespace)
    name = _named(pod, "Pod", 63)
    problems = pod_spec_problems(pod.get("spec"), "spec")
    if problems:
        raise invalid("Pod", name, problems)
    return default_pod(pod, namespace)


def default_pod(pod: JsonObject, namespace: str) -> JsonObject:
    pod.update({"kind": "Pod", "apiVersion": "v1"})
    pod["metadata"]["namespace"] = namespace
    spec = pod["spec"]
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("serviceAccountName", "default")
    for container in spec["containers"]:
        container.setdefault("imagePullPolicy", "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
    pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    return pod


def admit_job(body: object, namespace: str) -> JsonObject:
    job = _require_object(body, "Job", namespace)
    name = _named(job, "Job", 63)
    spec = job.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("template"), dict):
        raise invalid("Job", name, ["spec.template: Required value"])
    template_spec = spec["template"].get("spec")
    problems = pod_spec_problems(template_spec, "spec.template.spec")
    policy = template_spec.get("restartPolicy") if isinstance(template_spec, dict) else None
    if policy not in ("Never", "OnFailure"):
        problems.append(
            f'spec.template.spec.restartPolicy: Unsupported value: "{policy or "Always"}": '
            'supported values: "OnFailure", "Never"'
        )
    if problems:
        raise invalid("Job", name, problems)
    return _default_job(job, namespace)


def _default_job(job: JsonObject, namespace: str) -> JsonObject:
    job.update({"kind": "Job", "apiVersion": "batch/v1"})
    metadata = job["metadata"]
    metadata["namespace"] = namespace
    uid = metadata.setdefault("uid", str(uuid.uuid4()))
    spec = job["spec"]
    if spec.get("parallelism") is None and spec.get("completions") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template_metadata = spec["template"].setdefault("metadata", {})
    labels = template_metadata.setdefault("labels", {})
    for key in CONTROLLER_UID_LABELS:
        labels[key] = uid
    for key in JOB_NAME_LABELS:
        labels[key] = metadata["name"]
    job["status"] = {}
    return job


def admit_secret(body: object, namespace: str) -> JsonObject:
    secret = _require_object(body, "Secret", namespace)
    name = _named(secret, "Secret", 253)
    data = dict(secret.get("data") or {})
    problems = []
    for key, value in data.items():
        try:
            base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            problems.append(f"data[{key}]: Invalid value: illegal base64 data")
    if problems:
        raise invalid("Secret", name, problems)
    for key, value in (secret.pop("stringData", None) or {}).items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    secret.update({"kind": "Secret", "apiVersion": "v1", "data": data})
    secret.setdefault("type", "Opaque")
    secret["metadata"]["namespace"] = namespace
    return secret
