"""How an agent runs an allocation: the launcher interface (`base`) and its implementations, by runtime name.

`LAUNCHERS` maps a runtime's name to its launcher class (each takes the agent's work root and id). Only
`process` exists today; the container launchers (Docker, Podman) join it as one entry each, and the
conformance suite (tests/unit/agent/test_launcher_conformance.py) runs over every entry.
"""

from __future__ import annotations

from stalwart.agent.launchers.base import Launched, Launcher, LaunchError, LaunchSpec, Mount, RunAs, Started
from stalwart.agent.launchers.process import ProcessLauncher

LAUNCHERS: dict[str, type[Launcher]] = {ProcessLauncher.name: ProcessLauncher}

__all__ = ["LAUNCHERS", "LaunchError", "LaunchSpec", "Launched", "Launcher", "Mount", "ProcessLauncher", "RunAs",
           "Started"]
