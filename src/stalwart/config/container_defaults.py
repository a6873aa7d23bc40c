"""The master config's `task_container_defaults` (cluster-wide and per resource pool): their keys, their checks,
and a pool's merged over the cluster's, as Determined merges them.

What every task container gets unless its own config says otherwise: a default image per slot type, the size of
/dev/shm, the network mode (host by default: a DDP rendezvous across agents works as for processes; bridge and
none are allowed), bind mounts, devices, environment variables, capabilities, whether to pull the image always,
and the registry's credentials. Mounts and devices given here are the admin's, so they are trusted (no
`task_container_policy` applies to them), but none may mount `/` or the container engine's socket.

A pool's section is merged over the cluster's key by key (Determined's `TaskContainerDefaultsConfig.Merge`): a
scalar or the registry credentials the pool gives replace the cluster's; images per slot type; environment
variables by name (the pool's win); capabilities are joined; bind mounts and devices are the pool's, then the
cluster's whose `container_path` the pool does not use. Determined's other keys (pod specs, Slurm, PBS, ...)
are accepted and not used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stalwart.config._schema import (
    Field,
    Problems,
    anything,
    boolean,
    check_section,
    choice,
    is_int,
    list_of,
    section,
    string,
    type_name,
)
from stalwart.config.container_policy import engine_socket_refusal
from stalwart.config.environment import REGISTRY_AUTH_SPEC, SLOT_KINDS, check_environment_variables, check_image
from stalwart.config.sections import BIND_MOUNT_SPEC, DEVICE_SPEC, check_policy_list

DEFAULT_SHM_SIZE = 4 * 1024**3
"""/dev/shm of a task container when neither its config nor the master's defaults give one (Determined's)."""
NETWORK_MODES = ("host", "bridge", "none")

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5, "e": 1024**6}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?)(?:i?b?)\s*$", re.IGNORECASE)


def byte_size(value: Any) -> int | None:
    """Bytes of a size given as an integer, or as text with a unit as Docker reads `--shm-size` (`128M`,
    `1.5G`, `512KiB`: k, m, g... are powers of 1024, with or without `b`/`ib`); None when it is neither."""
    if is_int(value):
        return int(value) if value >= 0 else None
    match = _SIZE.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def _shm_size_bytes(value: Any, path: str, problems: Problems) -> Any:
    count = byte_size(value)
    if count is None or count <= 0:
        problems.add(path, f"expected a size in bytes greater than 0 (an integer, or text such as 8G or 512MiB), "
                           f"got {type_name(value)}")
        return value
    return count


def _admin_mount(value: Any, path: str, problems: Problems) -> Any:
    mount = check_section(value, path, BIND_MOUNT_SPEC, problems)
    host = mount.get("host_path")
    refusal = engine_socket_refusal(host) if isinstance(host, str) and host.startswith("/") else None
    if refusal:
        problems.add(f"{path}.host_path", f"{host} {refusal}; no task container may mount it, whoever asks")
    return mount


_LOOSE = Field(anything())  # Determined's keys that Stalwart accepts and does not use
DEFAULTS_SPEC: dict[str, Field] = {
    "image": Field(check_image),
    "shm_size_bytes": Field(_shm_size_bytes),
    "network_mode": Field(choice(*NETWORK_MODES)),
    "bind_mounts": Field(list_of(_admin_mount)),
    "devices": Field(list_of(section(DEVICE_SPEC))),
    "environment_variables": Field(check_environment_variables),
    "add_capabilities": Field(list_of(string(nonempty=True))),
    "drop_capabilities": Field(list_of(string(nonempty=True))),
    "force_pull_image": Field(boolean()),
    "registry_auth": Field(section(REGISTRY_AUTH_SPEC)),
    "log_policies": Field(check_policy_list),  # merged under each experiment's by name (docs/logs.md)
    **{key: _LOOSE for key in (
        "dtrain_network_interface", "nccl_port_range", "gloo_port_range", "cpu_pod_spec", "gpu_pod_spec",
        "startup_hook", "work_dir", "slurm", "pbs", "kubernetes", "preemption_timeout")},
}


def check_defaults(value: Any, path: str, problems: Problems) -> dict[str, Any]:
    """A `task_container_defaults` section: the keys it gives, checked and normalised (images and environment
    variables as {cpu, cuda, rocm} maps, sizes in bytes); keys it leaves out are absent."""
    checked = check_section(value, path, DEFAULTS_SPEC, problems)
    return {key: given for key, given in checked.items() if given is not None}


@dataclass(frozen=True)
class ContainerDefaults:
    """The task container defaults that hold in one resource pool (the pool's merged over the cluster's)."""

    image: Mapping[str, str | None] = field(default_factory=lambda: dict.fromkeys(SLOT_KINDS))
    shm_size_bytes: int = DEFAULT_SHM_SIZE
    network_mode: str = "host"
    bind_mounts: tuple[Mapping[str, Any], ...] = ()
    devices: tuple[Mapping[str, Any], ...] = ()
    environment_variables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    add_capabilities: tuple[str, ...] = ()
    drop_capabilities: tuple[str, ...] = ()
    force_pull_image: bool = False
    registry_auth: Mapping[str, Any] | None = field(default=None, repr=False)  # a secret: never logged

    def image_for(self, kind: str) -> str | None:
        return self.image.get(kind)

    def variables_for(self, kind: str) -> tuple[str, ...]:
        return tuple(self.environment_variables.get(kind) or ())


def _env_name(entry: str) -> str:
    return entry.split("=", 1)[0]


def _env_over(base: list[str], over: list[str]) -> list[str]:
    """`over`'s entries, then `base`'s whose names `over` does not set (Determined's mergeEnvVars)."""
    named = {_env_name(e) for e in over}
    return list(over) + [e for e in base if _env_name(e) not in named]


def by_container_path(first: list[Any], then: list[Any]) -> list[Any]:
    """`first`'s mounts (or devices), then `then`'s whose container_path `first` does not use."""
    used = {m.get("container_path") for m in first if isinstance(m, Mapping)}
    return list(first) + [m for m in then if not (isinstance(m, Mapping) and m.get("container_path") in used)]


def joined(first: Any, then: Any) -> list[str]:
    """Two lists of names (capabilities) as one, each name once, in order."""
    return list(dict.fromkeys([*(first or []), *(then or [])]))


def merge_over(cluster: Mapping[str, Any], pool: Mapping[str, Any]) -> dict[str, Any]:
    """A pool's checked section (`check_defaults`) merged over the cluster's, key by key."""
    out = dict(cluster)
    for key, value in pool.items():
        base = cluster.get(key)
        if base is None:
            out[key] = value
        elif key == "image":
            out[key] = {k: value.get(k) or base.get(k) for k in SLOT_KINDS}
        elif key == "environment_variables":
            out[key] = {k: _env_over(base.get(k) or [], value.get(k) or []) for k in SLOT_KINDS}
        elif key in ("add_capabilities", "drop_capabilities"):
            out[key] = joined(value, base)
        elif key in ("bind_mounts", "devices"):
            out[key] = by_container_path(value, base)
        elif key == "log_policies":  # by name: the pool's, then the cluster's of other names (Determined's merge)
            named = {p.get("name") for p in value if isinstance(p, Mapping) and p.get("name")}
            out[key] = value + [p for p in base if not (isinstance(p, Mapping) and p.get("name") in named)]
        else:
            out[key] = value
    return out


def defaults_of(given: Mapping[str, Any]) -> ContainerDefaults:
    """The typed defaults from a checked (and merged) section."""
    image = given.get("image") or {}
    env = given.get("environment_variables") or {}
    return ContainerDefaults(
        image={kind: image.get(kind) for kind in SLOT_KINDS},
        shm_size_bytes=int(given.get("shm_size_bytes") or DEFAULT_SHM_SIZE),
        network_mode=str(given.get("network_mode") or "host"),
        bind_mounts=tuple(given.get("bind_mounts") or ()),
        devices=tuple(given.get("devices") or ()),
        environment_variables={kind: tuple(env.get(kind) or ()) for kind in SLOT_KINDS},
        add_capabilities=tuple(given.get("add_capabilities") or ()),
        drop_capabilities=tuple(given.get("drop_capabilities") or ()),
        force_pull_image=bool(given.get("force_pull_image")),
        registry_auth=given.get("registry_auth"),
    )
