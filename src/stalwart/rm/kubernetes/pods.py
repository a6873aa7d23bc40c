"""A run's Kubernetes objects, as plain manifests (dicts the API takes): one Job per pod (one pod per container of
the run, ranks 0..N-1), and the Secret holding the run's single-use join credential, which the pods read through
`secretKeyRef` (so no credential is ever written in a pod spec).

`environment.pod_spec` is merged as Determined merges it (docs/kubernetes.md, "pod_spec"): the user's pod spec is the
base; its container named `determined-container` (or `stalwart-container`) gives the task container its extra fields
(volume mounts and variables appended, resources merged under ours, which set the slots); the other containers stay
(sidecars); pod-level fields (volumes, node selector, tolerations, affinity, service account, priority class) are
the user's; `restartPolicy` is always Never (a failed pod is the run's end, decided by the master)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TASK_CONTAINER = "stalwart-container"
USER_CONTAINER_NAMES = ("determined-container", TASK_CONTAINER)
JOIN_TOKEN_ENV = "STALWART_JOIN_TOKEN"  # what stalwart.agent.pod reads
SECRET_KEY = "join-token"
LABEL_MANAGED = "app.kubernetes.io/managed-by"
LABEL_ALLOCATION = "stalwart.ai/allocation"
LABEL_PREFIX = "stalwart.ai/prefix"
LABEL_RANK = "stalwart.ai/rank"
LABEL_POOL = "stalwart.ai/resource-pool"
LABEL_PODS = "stalwart.ai/pods"
MANAGED_BY = "stalwart"
GPU_RESOURCE = {"cuda": "nvidia.com/gpu", "rocm": "amd.com/gpu"}


class PodSpecError(ValueError):
    """The run's pods cannot be built as asked (the message names the key and the fix)."""


@dataclass(frozen=True)
class RunPods:
    """What one run's pods are made of. `slots_per_pod`: each pod's share (the run's slots split evenly);
    `pod_spec`: the task's `environment.pod_spec` over its pool's default pod spec (merged by the caller)."""

    name: str  # the run's base name: its Jobs are `<name>-<rank>`, its Secret `<name>`
    namespace: str
    prefix: str  # the master's job name prefix (a label: one master's objects among others')
    allocation_id: str
    pool: str
    pods: int
    slots_per_pod: int
    slot_type: str
    image: str
    command: Sequence[str]
    master_url: str
    cpu_request: float | None = None
    scheduler_name: str | None = None
    pod_spec: Mapping[str, Any] = field(default_factory=dict)
    environment: Mapping[str, str] = field(default_factory=dict)

    def job_name(self, rank: int) -> str:
        return f"{self.name}-{rank}"


def split_slots(slots: int, max_slots_per_pod: int | None) -> tuple[int, int]:
    """(pods, slots per pod) for a run of `slots`: one pod unless `max_slots_per_pod` is smaller, then as many
    full pods as needed; the slots must divide evenly (Determined's rule), else `PodSpecError`."""
    if not max_slots_per_pod or slots <= max_slots_per_pod:
        return 1, max(slots, 0)
    if slots % max_slots_per_pod:
        raise PodSpecError(f"resources.slots_per_trial: {slots} slots do not split evenly into pods of at most "
                           f"{max_slots_per_pod} (max_slots_per_pod): ask a multiple of {max_slots_per_pod}")
    return slots // max_slots_per_pod, max_slots_per_pod


def labels(run: RunPods, rank: int | None = None) -> dict[str, str]:
    out = {LABEL_MANAGED: MANAGED_BY, LABEL_PREFIX: run.prefix.rstrip("-") or "stalwart",
           LABEL_ALLOCATION: run.allocation_id, LABEL_POOL: run.pool}
    if rank is not None:
        out[LABEL_RANK] = str(rank)
        out[LABEL_PODS] = str(run.pods)
    return out


def join_secret(run: RunPods, token: str) -> dict[str, Any]:
    """The Secret the run's pods read their join credential from (stringData: the API encodes it)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": run.name, "namespace": run.namespace, "labels": labels(run)},
            "stringData": {SECRET_KEY: token}}


def resources(run: RunPods) -> dict[str, dict[str, str]]:
    """The task container's requests and limits: the slots as GPUs, or (cpu slots) as CPUs."""
    if run.slot_type == "cpu":
        cpus = run.slots_per_pod * (run.cpu_request or 1.0) or (run.cpu_request or 1.0)
        amount = {"cpu": _quantity(cpus)}
        return {"requests": dict(amount), "limits": dict(amount)}
    gpu = {GPU_RESOURCE.get(run.slot_type, GPU_RESOURCE["cuda"]): str(run.slots_per_pod)}
    return {"requests": dict(gpu), "limits": dict(gpu)} if run.slots_per_pod else {"requests": {}, "limits": {}}


def _quantity(cpus: float) -> str:
    return str(int(cpus)) if float(cpus).is_integer() else f"{int(round(cpus * 1000))}m"


def task_container(run: RunPods, rank: int) -> dict[str, Any]:
    args = ["--master", run.master_url, "--allocation", run.allocation_id, "--resource-pool", run.pool,
            "--slots", str(run.slots_per_pod), "--slot-type", run.slot_type, "--agent-id", run.job_name(rank)]
    env = [{"name": JOIN_TOKEN_ENV, "valueFrom": {"secretKeyRef": {"name": run.name, "key": SECRET_KEY}}},
           *({"name": k, "value": v} for k, v in sorted(run.environment.items()))]
    return {"name": TASK_CONTAINER, "image": run.image, "command": [*run.command, *args], "env": env,
            "resources": resources(run)}


def pod_template(run: RunPods, rank: int) -> dict[str, Any]:
    """The pod of `rank`: the user's pod spec merged under the task container."""
    user = copy.deepcopy(dict(run.pod_spec))
    spec = dict(user.get("spec") or {})
    mine = task_container(run, rank)
    theirs = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    base = next((c for c in theirs if c.get("name") in USER_CONTAINER_NAMES), None)
    spec["containers"] = [merge_container(mine, base)] + [c for c in theirs if c is not base]
    spec["restartPolicy"] = "Never"
    if run.scheduler_name and not spec.get("schedulerName"):
        spec["schedulerName"] = run.scheduler_name
    meta = dict(user.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels(run, rank)}
    meta.pop("name", None)
    meta.pop("namespace", None)
    return {"metadata": meta, "spec": spec}


def merge_container(mine: dict[str, Any], theirs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The task container over the user's: ours name, image, command and slots; theirs add the rest."""
    if not theirs:
        return mine
    out = copy.deepcopy(dict(theirs))
    out.update({k: mine[k] for k in ("name", "image", "command")})
    out.pop("args", None)
    out["env"] = [*mine["env"], *[e for e in out.get("env") or [] if e.get("name") != JOIN_TOKEN_ENV]]
    res = dict(out.get("resources") or {})
    for kind in ("requests", "limits"):
        res[kind] = {**(res.get(kind) or {}), **mine["resources"][kind]}
    out["resources"] = res
    return out


def job(run: RunPods, rank: int) -> dict[str, Any]:
    """The Job of `rank`: one pod, never retried (backoffLimit 0), kept until the master deletes it."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": run.job_name(rank), "namespace": run.namespace, "labels": labels(run, rank)},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": pod_template(run, rank)}}


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """What a pod object asks of its node: CPUs and GPUs (any vendor), summed over its containers."""
    out = {"cpu": 0.0, "gpu": 0.0}
    for c in (pod.get("spec") or {}).get("containers") or []:
        req = {**((c.get("resources") or {}).get("limits") or {}), **((c.get("resources") or {}).get("requests") or {})}
        out["cpu"] += cpu_amount(req.get("cpu"))
        out["gpu"] += sum(float(v) for k, v in req.items() if k in GPU_RESOURCE.values())
    return out


def cpu_amount(value: Any) -> float:
    """A Kubernetes CPU quantity (`2`, `1.5`, `500m`) as CPUs."""
    if value is None:
        return 0.0
    text = str(value)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
