"""How an allocation's GPU slots reach its container, per engine, and what CUDA_VISIBLE_DEVICES says inside.

Docker asks the NVIDIA runtime for the host's devices by id (a device request, as `--gpus '"device=1,3"'`);
Podman names them as CDI devices (`nvidia.com/gpu=1`, from `nvidia-ctk cdi generate`). Either way the
container sees only its own GPUs, numbered from 0, so CUDA_VISIBLE_DEVICES inside is `0,1,...` whatever the
host's ids are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Engine = Literal["docker", "podman"]
CDI_GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class GpuAccess:
    """What the container's create request carries for its GPUs."""

    device_requests: list[dict[str, Any]] = field(default_factory=list)  # Docker Engine API DeviceRequest objects
    devices: list[dict[str, str]] = field(default_factory=list)  # Docker Engine API DeviceMapping objects
    env: dict[str, str] = field(default_factory=dict)


def gpu_access(engine: Engine, slots: tuple[int, ...]) -> GpuAccess:
    """The device request (Docker) or CDI devices (Podman) for the host's GPUs `slots`."""
    if not slots:
        return GpuAccess()
    env = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(len(slots)))}
    if engine == "docker":
        request = {"Driver": "nvidia", "Count": 0, "DeviceIDs": [str(s) for s in slots],
                   "Capabilities": [["gpu"]], "Options": {}}
        return GpuAccess(device_requests=[request], env=env)
    # a CDI name alone: Podman resolves it to the device nodes, mounts and hooks its CDI spec lists
    return GpuAccess(devices=[{"PathOnHost": f"{CDI_GPU}={s}", "PathInContainer": "", "CgroupPermissions": ""}
                              for s in slots], env=env)
