"""How an agent runs an allocation: the launcher interface (`base`) and its implementations, by runtime name.

`LAUNCHERS` maps a runtime's name to its launcher class (each takes the agent's work root and id; a container
launcher also its engine's URL): `process`, `docker` and `podman` (`container.py`). The conformance suite
(tests/unit/agent/test_launcher_conformance.py) runs over every entry.
"""

from __future__ import annotations

from stalwart.agent.launchers.base import (
    ContainerOptions,
    Device,
    Harness,
    ImageError,
    ImageSource,
    Launched,
    Launcher,
    LaunchError,
    LaunchSpec,
    Mount,
    RunAs,
    Started,
)
from stalwart.agent.launchers.container import ContainerLauncher, DockerLauncher, PodmanLauncher
from stalwart.agent.launchers.process import ProcessLauncher

LAUNCHERS: dict[str, type[Launcher]] = {
    launcher.name: launcher for launcher in (ProcessLauncher, DockerLauncher, PodmanLauncher)}

__all__ = ["LAUNCHERS", "ContainerLauncher", "ContainerOptions", "Device", "DockerLauncher", "Harness", "ImageError",
           "ImageSource", "LaunchError", "LaunchSpec", "Launched", "Launcher", "Mount", "PodmanLauncher",
           "ProcessLauncher", "RunAs", "Started"]
