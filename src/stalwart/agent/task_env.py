"""What a task's processes get of the agent's own environment: a minimal base and what the agent config passes on.

A task does not inherit the agent's environment (which may hold the agent's secrets, its cluster token, its
home). Its launcher starts with `inherited(...)`: the variables of `BASE` (where programs are, the user, the
locale and time zone, the temporary directory, and where Python finds Stalwart's harness) and those the agent
config's `task_env_passthrough` names (glob patterns; by default the CUDA, NCCL, library path and proxy
variables GPU jobs need), never one starting `STALWART_` or `DET_`. The task's start order then adds what
Stalwart sets for it and the experiment config's `environment.environment_variables` (agent/process.py).
docs/scheduling.md, "The environment of a task", says the same to users.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

BASE = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR",
        "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE")
"""What every task gets of the agent's environment: a working shell and a Python that finds Stalwart's harness."""
NEVER = ("STALWART_", "DET_")
"""The agent's own settings (its cluster token, its home) and Determined's: never passed on, whatever matches."""


def matcher(patterns: Iterable[str]) -> re.Pattern[str]:
    """One regular expression matching any of the glob `patterns` (case-sensitive, as variable names are)."""
    parts = [fnmatch.translate(p) for p in patterns]
    return re.compile("|".join(parts) if parts else "(?!)")


def inherited(agent_env: Mapping[str, str], passthrough: Iterable[str]) -> dict[str, str]:
    """The variables of `agent_env` a task starts with: `BASE` and what `passthrough` matches, less `NEVER`."""
    wanted = matcher([*BASE, *passthrough])
    return {k: v for k, v in agent_env.items() if wanted.match(k) and not k.startswith(NEVER)}
