"""An elastic pool's `provider` section (`resource_pools[].provider`, docs/elastic-agents.md): Determined's keys
for `type: aws` and `type: gcp` with its defaults (`min_instances` 0, `max_instances` 5, `max_idle_agent_period`
and `max_agent_starting_period` 20m), plus Stalwart's own `endpoint_url` (an emulator or a private cloud's API),
`agent_command` (how an instance runs Stalwart) and `agent_work_dir`. `ProviderConfig` is what the master's
provisioner reads; durations are given as `30s`, `20m`, `1h` or seconds."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stalwart.config._schema import (
    Checker,
    Field,
    Problems,
    anything,
    boolean,
    check_section,
    choice,
    integer,
    list_of,
    map_of,
    section,
    string,
    type_name,
)

PROVIDER_TYPES = ("aws", "gcp")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def duration_s(value: Any) -> float | None:
    """`30s`, `20m`, `1h`, `500ms` or a number of seconds, in seconds; None when it is none of those."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value >= 0 else None
    found = _DURATION.match(value) if isinstance(value, str) else None
    return float(found[1]) * _UNIT_S[found[2]] if found else None


def duration() -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if duration_s(value) is None:
            problems.add(path, f"expected a duration such as 30s, 20m or 1h (or seconds), got {type_name(value)}")
        return value

    return check


_ACCEPTED = Field(anything())  # Determined's keys with no meaning here (its agent container, TLS names)
COMMON_KEYS: dict[str, Field] = {
    "type": Field(choice(*PROVIDER_TYPES), required=True,
                  required_message="required: aws or gcp (the cloud that runs this pool's instances)"),
    "master_url": Field(string(nonempty=True)),  # how instances reach the master (default: its advertised URL)
    "startup_script": Field(string(), default=""),
    "container_startup_script": Field(string(), default=""),
    "max_idle_agent_period": Field(duration(), default="20m"),
    "max_agent_starting_period": Field(duration(), default="20m"),
    "min_instances": Field(integer(0), default=0),
    "max_instances": Field(integer(0), default=5),
    "instance_slots": Field(integer(0), default=1),
    "cpu_slots_allowed": Field(boolean(), default=False),
    "launch_error_timeout": Field(duration(), default="0s"),
    "launch_error_retries": Field(integer(0), default=0),
    "endpoint_url": Field(string(nonempty=True)),  # Stalwart's: the cloud API's address (emulators, private clouds)
    "agent_command": Field(string(nonempty=True), default="stalwart"),  # Stalwart's: the instance's `stalwart`
    "agent_work_dir": Field(string(nonempty=True), default="/var/lib/stalwart/agent"),  # Stalwart's
    **{k: _ACCEPTED for k in ("master_cert_name", "agent_docker_image", "agent_docker_network",
                              "agent_docker_runtime", "agent_reattach_enabled")},
}

AWS_KEYS: dict[str, Field] = {
    "region": Field(string(nonempty=True), default="us-east-1"),
    "image_id": Field(string(nonempty=True), required=True, required_message="required: the AMI the instances boot"),
    "instance_type": Field(string(nonempty=True), default="g4dn.metal"),
    "root_volume_size": Field(integer(1), default=200),
    "tag_key": Field(string(nonempty=True), default="managed-by"),
    "tag_value": Field(string(nonempty=True)),  # default: this master's cluster id
    "custom_tags": Field(list_of(section({"key": Field(string(nonempty=True), required=True),
                                          "value": Field(string(), default="")}))),
    "instance_name": Field(string(nonempty=True), default="stalwart-agent"),
    "ssh_key_name": Field(string(nonempty=True)),
    "iam_instance_profile_arn": Field(string(nonempty=True)),
    "network_interface": Field(section({"public_ip": Field(boolean(), default=True),
                                        "subnet_id": Field(string(nonempty=True)),
                                        "security_group_id": Field(string(nonempty=True))})),
    "spot": Field(boolean(), default=False),
    "spot_max_price": Field(string(nonempty=True)),
}

GCP_KEYS: dict[str, Field] = {
    "project": Field(string(nonempty=True), required=True, required_message="required: the GCP project id"),
    "zone": Field(string(nonempty=True), required=True, required_message="required: the zone, e.g. us-central1-a"),
    "boot_disk_size": Field(integer(1), default=200),
    "boot_disk_source_image": Field(string(nonempty=True), required=True,
                                    required_message="required: the image the instances boot"),
    "label_key": Field(string(nonempty=True), default="managed-by"),
    "label_value": Field(string(nonempty=True)),  # default: this master's cluster id
    "name_prefix": Field(string(nonempty=True), default="stalwart-"),
    "network_interface": Field(section({"network": Field(string(nonempty=True), default="global/networks/default"),
                                        "subnetwork": Field(string(nonempty=True)),
                                        "external_ip": Field(boolean(), default=False)})),
    "network_tags": Field(list_of(string(nonempty=True)), default=list),
    "service_account": Field(section({"email": Field(string()), "scopes": Field(list_of(string()))})),
    "instance_type": Field(section({"machine_type": Field(string(nonempty=True), default="n1-standard-32"),
                                    "gpu_type": Field(string(nonempty=True)),
                                    "gpu_num": Field(integer(0), default=0),
                                    "preemptible": Field(boolean(), default=False)}),
                           default=lambda: {"machine_type": "n1-standard-32", "gpu_num": 0, "preemptible": False}),
    "base_config": Field(map_of(anything())),
    "operation_timeout_period": Field(duration(), default="5m"),
}


def check_provider(value: Any, path: str, problems: Problems) -> Any:
    """A pool's `provider` section: the common keys and those of its `type`, every problem by its path."""
    kind = value.get("type") if isinstance(value, dict) else None
    extra = AWS_KEYS if kind == "aws" else GCP_KEYS if kind == "gcp" else {}
    checked = check_section(value, path, {**COMMON_KEYS, **extra}, problems)
    if not problems and checked["min_instances"] > checked["max_instances"]:
        problems.add(f"{path}.min_instances", f"{checked['min_instances']} is more than max_instances "
                                              f"({checked['max_instances']})")
    if not problems and checked["instance_slots"] == 0 and not checked["cpu_slots_allowed"]:
        problems.add(f"{path}.instance_slots", "0 slots per instance runs no work; give the slots each instance "
                                               "has (or set cpu_slots_allowed: true)")
    return checked


@dataclass(frozen=True)
class ProviderConfig:
    """One elastic pool's provider: the cloud, the instance counts and periods (seconds) the provisioner decides
    with, and every checked key (`settings`) for the cloud's own launch call."""

    type: str
    min_instances: int = 0
    max_instances: int = 5
    instance_slots: int = 1
    max_idle_s: float = 1200.0
    max_starting_s: float = 1200.0
    master_url: str | None = None
    endpoint_url: str | None = None
    settings: dict[str, Any] = field(default_factory=dict, repr=False)

    @staticmethod
    def of(checked: dict[str, Any] | None) -> ProviderConfig | None:
        if not checked:
            return None
        return ProviderConfig(
            checked["type"], checked["min_instances"], checked["max_instances"], max(1, checked["instance_slots"]),
            duration_s(checked["max_idle_agent_period"]) or 0.0,
            duration_s(checked["max_agent_starting_period"]) or 0.0,
            checked.get("master_url"), checked.get("endpoint_url"), dict(checked))


def cross_check_pools(cfg: dict[str, Any], problems: Problems) -> None:
    """An elastic pool needs the agent resource manager: its instances run Stalwart agents."""
    kind = (cfg.get("resource_manager") or {}).get("type") or "agent"
    for i, pool in enumerate(cfg.get("resource_pools") or []):
        if isinstance(pool, dict) and pool.get("provider") and kind != "agent":
            problems.add(f"resource_pools[{i}].provider", f"elastic pools run Stalwart agents on their instances; "
                                                          f"they need resource_manager.type: agent, not {kind}")
