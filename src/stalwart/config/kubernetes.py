"""The Kubernetes resource manager's keys (`resource_manager: {type: kubernetes, ...}`, docs/kubernetes.md):
Determined's where it has them (`default_namespace`, `max_slots_per_pod`, `slot_type`, `slot_resource_requests`,
`master_service_name`, `default_scheduler`, `determined_master_host/port/scheme`), and Stalwart's own (`kubeconfig`,
`kube_context`, `agent_command`, `job_name_prefix`, `job_start_timeout`, `gang_start_timeout`).
`KubernetesConfig` is what the master's Kubernetes manager reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stalwart.config._schema import Field, any_map, choice, integer, list_of, number, section, string

SLOT_TYPES = ("cuda", "gpu", "rocm", "cpu")
AGENT_MODULE = "stalwart.agent.pod"

K8S_RM_KEYS: dict[str, Field] = {
    "default_namespace": Field(string(nonempty=True)),
    "max_slots_per_pod": Field(integer(1)),
    "slot_type": Field(choice(*SLOT_TYPES)),
    "slot_resource_requests": Field(section({"cpu": Field(number(exclusive_min=0))})),
    "master_service_name": Field(string(nonempty=True)),
    "default_scheduler": Field(string(nonempty=True)),
    "determined_master_host": Field(string(nonempty=True)),
    "determined_master_port": Field(integer(1, 65535)),
    "determined_master_scheme": Field(choice("http", "https")),
    "kubeconfig": Field(string(nonempty=True)),  # outside the cluster; inside, the pod's service account is used
    "kube_context": Field(string(nonempty=True)),
    "agent_command": Field(list_of(string(nonempty=True), nonempty=True)),
    "job_name_prefix": Field(string(nonempty=True)),
    "job_start_timeout": Field(number(minimum=1)),
    "gang_start_timeout": Field(number(minimum=1)),
    "credentials": Field(any_map()),  # Determined's (unused here: the kubeconfig or the service account decide)
}
"""The keys a `type: kubernetes` resource manager section adds to the agent manager's."""


@dataclass(frozen=True)
class KubernetesConfig:
    """The Kubernetes manager's settings.

    `agent_command` starts the one-shot agent in each pod's container (the pod adds its arguments): the trial's
    image must have Stalwart installed, as Determined's images had Determined. `gang_start_timeout`: how long a
    multi-pod run may hold some pods placed while others wait before all are deleted and it queues again (all or
    nothing). `job_start_timeout`: how long placed pods may take to join before the run fails (an image that
    cannot start, a missing Stalwart)."""

    default_namespace: str = "default"
    max_slots_per_pod: int | None = None
    slot_type: str = "cuda"
    cpu_request: float | None = None  # slot_resource_requests.cpu: CPUs per slot of a cpu pod
    master_service_name: str | None = None
    default_scheduler: str | None = None
    master_host: str | None = None
    master_port: int | None = None
    master_scheme: str = "http"
    kubeconfig: str | None = None
    kube_context: str | None = None
    agent_command: tuple[str, ...] = ("python3", "-m", AGENT_MODULE)
    job_name_prefix: str = "stalwart-"
    job_start_timeout: float = 600.0
    gang_start_timeout: float = 60.0

    @property
    def cpu_slots(self) -> bool:
        return self.slot_type == "cpu"

    @staticmethod
    def of(rm: dict[str, Any]) -> KubernetesConfig:
        renamed = {"determined_master_host": "master_host", "determined_master_port": "master_port",
                   "determined_master_scheme": "master_scheme"}
        plain = ("default_namespace", "max_slots_per_pod", "slot_type", "master_service_name", "default_scheduler",
                 "kubeconfig", "kube_context", "job_name_prefix", "job_start_timeout", "gang_start_timeout")
        given: dict[str, Any] = {k: rm[k] for k in plain if rm.get(k) is not None}
        given |= {new: rm[old] for old, new in renamed.items() if rm.get(old) is not None}
        if rm.get("agent_command"):
            given["agent_command"] = tuple(rm["agent_command"])
        if given.get("slot_type") == "gpu":
            given["slot_type"] = "cuda"
        cpu = (rm.get("slot_resource_requests") or {}).get("cpu")
        if cpu is not None:
            given["cpu_request"] = float(cpu)
        return KubernetesConfig(**given)
