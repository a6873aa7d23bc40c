"""What a start order asks of a container, in the launcher's terms: the image and where it comes from, the
container-only options, the mounts (the config's bind mounts and the checkpoint storage's host path) and the
size of /dev/shm.

The master resolves the order's `container` block (the experiment's or command's `environment`, `bind_mounts`
and `resources`, over the pool's and the cluster's `task_container_defaults`; the image already chosen for
this agent's slot type) and has checked it against the pool's allow-lists at submit; this module only
translates it. A process-runtime agent never reads it (the trial runs in the agent's own Python).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stalwart.agent.launchers import ContainerOptions, Device, ImageSource, Mount

SHARED_STORAGE_TYPES = {"shared_fs": "host_path", "directory": "container_path"}


@dataclass(frozen=True)
class ContainerRun:
    """The container-only parts of one run's LaunchSpec."""

    source: ImageSource
    options: ContainerOptions
    mounts: tuple[Mount, ...]
    shm_size: int | None


def image_of(order: Mapping[str, Any]) -> str | None:
    """The image the order names (None: it names none)."""
    block = order.get("container") or {}
    image = block.get("image")
    return str(image) if image else None


def container_run(order: Mapping[str, Any], slot_ids: list[int], slot_type: str) -> ContainerRun:
    """The order's container block as launcher terms; `slot_ids` of a `cuda` agent are GPUs the container gets."""
    block: Mapping[str, Any] = order.get("container") or {}
    image = image_of(order)
    assert image is not None, "container_run needs an order that names an image"
    auth = block.get("registry_auth") or None
    source = ImageSource(image, force_pull=bool(block.get("force_pull")),
                         registry_auth={k: str(v) for k, v in auth.items() if v is not None} if auth else None)
    devices = tuple(Device(d["host_path"], d.get("container_path") or d["host_path"],
                           d.get("cgroup_permissions") or "rwm") for d in block.get("devices") or [])
    options = ContainerOptions(
        gpus=tuple(slot_ids) if slot_type == "cuda" else (),
        devices=devices,
        add_capabilities=tuple(block.get("add_capabilities") or ()),
        drop_capabilities=tuple(block.get("drop_capabilities") or ()),
        network_mode=str(block.get("network_mode") or "host"),
        ports={str(k): int(v) for k, v in (block.get("ports") or {}).items()},
        allow_root=bool(block.get("allow_root")),
    )
    mounts = tuple(Mount(b["host_path"], b["container_path"], read_only=bool(b.get("read_only")))
                   for b in block.get("bind_mounts") or [])
    shm = block.get("shm_size")
    return ContainerRun(source, options, mounts + storage_mounts(order, mounts), int(shm) if shm else None)


def storage_mounts(order: Mapping[str, Any], taken: tuple[Mount, ...]) -> tuple[Mount, ...]:
    """The checkpoint storage's directory on the host, mounted read-write at its own path, so the trial's
    config means the same inside the container (unless a bind mount of the config already covers it)."""
    trial = (order.get("info") or {}).get("trial") or {}
    storage = (trial.get("config") or {}).get("checkpoint_storage") or {}
    key = SHARED_STORAGE_TYPES.get(str(storage.get("type")))
    path = storage.get(key) if key else None
    if not path or any(m.container_path == path for m in taken):
        return ()
    return (Mount(str(path), str(path), read_only=False),)


def with_path_first(env: Mapping[str, str], key: str, first: str) -> dict[str, str]:
    """`env` with `first` at the front of the path list `key` (PYTHONPATH): what was there stays, after it."""
    out = dict(env)
    out[key] = f"{first}:{out[key]}" if out.get(key) else first
    return out
