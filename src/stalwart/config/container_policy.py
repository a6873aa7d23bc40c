"""What a task's own config may ask of its container: the master's `task_container_policy` (cluster-wide and per
resource pool) and the rules no policy lifts.

No bind mount of `/` or of a path that holds the container engine's socket (Docker's, Podman's, containerd's),
ever: a task with one could run anything as root on the host. Past that, nothing is allowed unless the pool's
policy allows it (an admin's allow-list, in the master config):

    task_container_policy:            # cluster-wide; a pool's own section replaces it key by key
      allowed_host_paths: [/data, /scratch]   # bind mounts of these directories or anything under them
      allowed_capabilities: [SYS_PTRACE]      # environment.add_capabilities (dropping is always allowed)
      allowed_devices: [/dev/fuse]            # resources.devices' host_path

Paths are compared as written, made normal (`/data/../etc` is `/etc`); symbolic links are the agent host's and are
not followed here. The master checks a config when the task is submitted (a 400 naming the key and the allow-list
that would let it through) and again when a run starts (an experiment submitted before a policy tightened, or
before Stalwart honoured these keys). The master's own `task_container_defaults` are the admin's and trusted.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config._schema import Field, Problems, check_section, list_of, string, type_name

ENGINE_SOCKETS = (
    "/var/run/docker.sock", "/run/docker.sock", "/var/run/docker", "/run/docker",
    "/run/podman", "/var/run/podman", "/run/user/*/podman", "/run/user/*/docker.sock",
    "/run/containerd", "/var/run/containerd",
)
"""Where container engines keep their sockets (`*`: any one directory, a user's runtime dir)."""
SETTING = "task_container_policy"


def normal_path(path: str) -> str:
    """`path` made normal: no `.`, `..`, doubled or trailing slashes."""
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("/") else normal


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def _overlaps(path: str, pattern: str) -> bool:
    """Whether `path` is `pattern`, above it or inside it."""
    return all(fnmatch.fnmatchcase(a, b) for a, b in zip(_parts(path), _parts(pattern), strict=False))


def engine_socket_refusal(host_path: str) -> str | None:
    """Why no container may mount `host_path` (an absolute path), or None."""
    path = normal_path(host_path)
    if path == "/":
        return "is the host's whole file system"
    for socket in ENGINE_SOCKETS:
        if _overlaps(path, socket):
            return (f"holds the container engine's socket ({socket}): a task given it could run anything as root "
                    "on the host")
    return None


def capability_name(name: str) -> str:
    """`cap_sys_admin`, `CAP_SYS_ADMIN` and `sys_admin` alike as SYS_ADMIN."""
    upper = name.strip().upper()
    return upper[4:] if upper.startswith("CAP_") else upper


def _absolute(value: Any, path: str, problems: Problems) -> Any:
    if not isinstance(value, str) or not value.startswith("/"):
        problems.add(path, f"expected an absolute path, got {type_name(value)}")
        return value
    return normal_path(value)


POLICY_SPEC: dict[str, Field] = {
    "allowed_host_paths": Field(list_of(_absolute)),
    "allowed_capabilities": Field(list_of(string(nonempty=True))),
    "allowed_devices": Field(list_of(_absolute)),
}


def check_policy(value: Any, path: str, problems: Problems) -> dict[str, Any]:
    """A `task_container_policy` section: the keys it gives (absent ones are left out)."""
    checked = check_section(value, path, POLICY_SPEC, problems)
    return {key: given for key, given in checked.items() if given is not None}


@dataclass(frozen=True)
class ContainerPolicy:
    """What tasks' configs may ask for in one resource pool (`pool`, named in refusals)."""

    pool: str = "default"
    allowed_host_paths: tuple[str, ...] = ()
    allowed_capabilities: tuple[str, ...] = ()
    allowed_devices: tuple[str, ...] = ()

    @staticmethod
    def of(pool: str, cluster: Mapping[str, Any], own: Mapping[str, Any] | None) -> ContainerPolicy:
        """The policy of `pool`: its own section's keys, else the cluster's."""
        merged = {**cluster, **(own or {})}
        return ContainerPolicy(pool, tuple(merged.get("allowed_host_paths") or ()),
                               tuple(capability_name(c) for c in merged.get("allowed_capabilities") or ()),
                               tuple(merged.get("allowed_devices") or ()))

    def host_path_allowed(self, host_path: str) -> bool:
        path = normal_path(host_path)
        return any(path == allowed or path.startswith(allowed.rstrip("/") + "/") for allowed in self.allowed_host_paths)


def _how_to_allow(policy: ContainerPolicy, key: str, allowed: tuple[str, ...]) -> str:
    now = ", ".join(allowed) if allowed else "none"
    return (f"resource pool '{policy.pool}' allows {now}. An admin can allow it in the master config: "
            f"{SETTING}.{key} (cluster-wide) or resource_pools[].{SETTING}.{key} (pool '{policy.pool}')")


def _list(config: Mapping[str, Any], *keys: str) -> list[Any]:
    value: Any = config
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, list) else []


def _mount_refusals(config: Mapping[str, Any], policy: ContainerPolicy) -> list[str]:
    out = []
    for i, mount in enumerate(_list(config, "bind_mounts")):
        host = mount.get("host_path") if isinstance(mount, Mapping) else None
        if not isinstance(host, str) or not host.startswith("/"):
            continue
        where = f"bind_mounts[{i}].host_path"
        never = engine_socket_refusal(host)
        if never:
            out.append(f"{where}: {host} {never}; no task may mount it, whatever the policy")
        elif not policy.host_path_allowed(host):
            out.append(f"{where}: {host} is not under a host path the task's resource pool allows; "
                       + _how_to_allow(policy, "allowed_host_paths", policy.allowed_host_paths))
    return out


def refusals(config: Mapping[str, Any], policy: ContainerPolicy) -> list[str]:
    """What `config` (an experiment's or command's: `bind_mounts`, `environment.add_capabilities`,
    `resources.devices`) asks that `policy` does not allow, one `key: why, and how to allow it` each."""
    out = _mount_refusals(config, policy)
    for i, cap in enumerate(_list(config, "environment", "add_capabilities")):
        if isinstance(cap, str) and capability_name(cap) not in policy.allowed_capabilities:
            out.append(f"environment.add_capabilities[{i}]: {cap} is not a capability the task's resource pool "
                       "allows; " + _how_to_allow(policy, "allowed_capabilities", policy.allowed_capabilities))
    for i, device in enumerate(_list(config, "resources", "devices")):
        host = device.get("host_path") if isinstance(device, Mapping) else None
        if isinstance(host, str) and normal_path(host) not in policy.allowed_devices:
            out.append(f"resources.devices[{i}].host_path: {host} is not a device the task's resource pool "
                       "allows; " + _how_to_allow(policy, "allowed_devices", policy.allowed_devices))
    return out


def require_allowed(config: Mapping[str, Any], policy: ContainerPolicy) -> None:
    """ConfigError (400) naming the first key `config` asks that `policy` does not allow (the others in its
    details)."""
    refused = refusals(config, policy)
    if refused:
        first, *rest = refused
        raise ConfigError(first, details=rest)
