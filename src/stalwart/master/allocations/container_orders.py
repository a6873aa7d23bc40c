"""The container half of a start order (`StartOrder.container`) and the task's own environment variables, for one
container of a run, from its task's config over its pool's `task_container_defaults` (the agent's pool).

The image and the variables are chosen for the container's slot type: the agent's (`cuda`, `rocm`; `gpu` reads as
`cuda`), or `cpu` when the container holds no slots. The image is the config's, else the pool's default for that
type, else the cluster's (none when none is set). Bind mounts and devices: the config's, then the defaults' whose
`container_path` the config does not use. /dev/shm: `resources.shm_size`, else `shm_size_bytes`. Capabilities:
the defaults' and the config's, joined. Variables: the defaults', then the config's (the config's win).

Registry credentials: the config's own; else the defaults' when the image is the defaults' own, or comes from the
registry they name (`serveraddress`), so a task never sends the admin's credentials to a registry of its choosing.
They go to the agent only.

The config is checked against the pool's `task_container_policy` again here (it was at submit): a run whose
config the policy no longer allows does not start (`ContainerRefused`; the run ends as SETUP_FAILED).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stalwart.config import views
from stalwart.config.container_defaults import ContainerDefaults, by_container_path, byte_size, joined
from stalwart.config.container_policy import capability_name, refusals
from stalwart.config.environment import SLOT_KINDS
from stalwart.master.queries import agents as agent_rows
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master

DOCKER_HUB = "docker.io"


class ContainerRefused(Exception):
    """The task's config asks what its pool's policy does not allow (or no task may have); the message says what."""


@dataclass(frozen=True)
class ContainerPart:
    """What a kind's start order takes from here: `container` (a ContainerOrder's fields), the task's variables
    for the slot type, and the slot type."""

    container: dict[str, Any]
    variables: dict[str, str]
    slot_type: str


def slot_kind(agent_slot_type: str | None, slot_ids: Sequence[int] | None) -> str:
    """cpu, cuda or rocm: the agent's slot type for a container that holds slots, else cpu."""
    if not slot_ids:
        return "cpu"
    kind = str(agent_slot_type or "cpu").lower()
    kind = "cuda" if kind == "gpu" else kind
    return kind if kind in SLOT_KINDS else "cpu"


def _section(config: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = config.get(key)
    return value if isinstance(value, Mapping) else {}


def _config_image(environment: Mapping[str, Any], kind: str) -> str | None:
    image = environment.get("image")
    if isinstance(image, str):
        return image or None
    if isinstance(image, Mapping):
        found = image.get(kind) or (image.get("gpu") if kind == "cuda" else None)
        return str(found) if found else None
    return None


def registry_of_image(image: str) -> str:
    """The registry an image name pulls from: its first part when that names a host, else Docker Hub."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first.lower()
    return DOCKER_HUB


def registry_of_address(address: str) -> str:
    """`registry_auth.serveraddress` as a registry host (`https://index.docker.io/v1/` is Docker Hub)."""
    host = address.split("://", 1)[-1].split("/", 1)[0].lower()
    return DOCKER_HUB if host in ("index.docker.io", "registry-1.docker.io", "docker.io") else host


def _given(auth: Mapping[str, Any] | None) -> dict[str, str] | None:
    kept = {k: str(v) for k, v in (auth or {}).items() if v is not None and v != ""}
    return kept or None


def _registry_auth(environment: Mapping[str, Any], own_image: bool, image: str | None,
                   defaults: ContainerDefaults) -> dict[str, str] | None:
    own = _given(environment.get("registry_auth"))
    if own is not None:
        return own
    admins = _given(defaults.registry_auth)
    if admins is None or image is None:
        return None
    if not own_image:
        return admins
    address = admins.get("serveraddress")
    return admins if address and registry_of_address(address) == registry_of_image(image) else None


def _mounts(config: Mapping[str, Any], defaults: ContainerDefaults) -> list[dict[str, Any]]:
    mounts = by_container_path(list(config.get("bind_mounts") or []), list(defaults.bind_mounts))
    return [{"host_path": m["host_path"], "container_path": m["container_path"],
             "read_only": bool(m.get("read_only")), "propagation": m.get("propagation") or "rprivate"}
            for m in mounts if isinstance(m, Mapping)]


def _devices(resources: Mapping[str, Any], defaults: ContainerDefaults) -> list[dict[str, Any]]:
    devices = by_container_path(list(resources.get("devices") or []), list(defaults.devices))
    return [{"host_path": d["host_path"], "container_path": d.get("container_path") or d["host_path"],
             "cgroup_permissions": d.get("mode") or "mrw"} for d in devices if isinstance(d, Mapping)]


def _variables(config: Mapping[str, Any], defaults: ContainerDefaults, kind: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in defaults.variables_for(kind):
        name, _, value = entry.partition("=")
        out[name] = value
    out.update(views.environment_variables(config, kind))
    return out


def container_order(m: Master, pool: str | None, config: Mapping[str, Any], kind: str,
                    defaults: ContainerDefaults) -> dict[str, Any]:
    """A ContainerOrder's fields for a task with `config` in `pool` (whose defaults are `defaults`), its image
    chosen for `kind`."""
    environment, resources = _section(config, "environment"), _section(config, "resources")
    own_image = _config_image(environment, kind)
    image = own_image or defaults.image_for(kind)
    shm = byte_size(resources.get("shm_size")) if resources.get("shm_size") is not None else None
    return {
        "image": image,
        "slot_type": kind,
        "force_pull": bool(environment.get("force_pull_image")) or defaults.force_pull_image,
        "registry_auth": _registry_auth(environment, own_image is not None, image, defaults),
        "bind_mounts": _mounts(config, defaults),
        "devices": _devices(resources, defaults),
        "shm_size": shm if shm is not None else defaults.shm_size_bytes,
        "network_mode": defaults.network_mode,
        "add_capabilities": [capability_name(c) for c in joined(defaults.add_capabilities,
                                                                 environment.get("add_capabilities"))],
        "drop_capabilities": [capability_name(c) for c in joined(defaults.drop_capabilities,
                                                                  environment.get("drop_capabilities"))],
        "ports": {str(k): int(v) for k, v in dict(environment.get("ports") or {}).items()},
        "allow_root": m.settings.cluster.root_tasks_allowed(pool),
    }


def for_container(m: Master, conn: Conn, config: Mapping[str, Any], container: Mapping[str, Any]) -> ContainerPart:
    """The container half of the start order of `container` (a row of the run's gang) of a task with `config`.
    ContainerRefused when the pool's policy does not allow what the config asks."""
    agent = agent_rows.find(conn, str(container["agent_id"]))
    pool = str(agent["resource_pool"]) if agent is not None else None
    refused = refusals(config, m.settings.cluster.container_policy(pool))
    if refused:
        raise ContainerRefused("the master refused to start this task's container: " + "; ".join(refused))
    kind = slot_kind(agent["slot_type"] if agent is not None else None, container.get("slot_ids"))
    defaults = m.settings.cluster.container_defaults(pool)
    return ContainerPart(container_order(m, pool, config, kind, defaults), _variables(config, defaults, kind), kind)
