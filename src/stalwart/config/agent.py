"""The agent config file (`stalwart agent run --config agent.yaml`): what an agent passes on to the tasks it runs.

    task_env_passthrough:      # variables of the agent's own environment its tasks get too (glob patterns)
      - LD_LIBRARY_PATH
      - "CUDA_*"
      - "NCCL_*"
      - HF_HOME
    runtime: docker            # process (the default), docker or podman: how the agent runs its tasks
    container_engine_url: unix:///run/podman/podman.sock   # a container runtime's engine (default: its socket)
    harness_bundles: /srv/stalwart/harness-bundles         # pre-built harness bundles (docs/containers.md)

A task's processes get a clean environment (docs/scheduling.md, "The environment of a task"): a minimal base,
what Stalwart sets for the task, the experiment config's `environment.environment_variables`, and the agent's
variables `task_env_passthrough` matches. Left out, the list is `DEFAULT_TASK_ENV_PASSTHROUGH`, which GPU jobs
need; a list given replaces it. `runtime`, `container_engine_url` and `harness_bundles` are what `stalwart agent
run --runtime`, `--engine-url` and `--harness-bundles` set (a flag given wins). `load_agent_config` raises
ConfigError naming the first bad field.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config._schema import Field, Problems, check_section, choice, list_of, string
from stalwart.config.source import parse_yaml, read_config_file

PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
DEFAULT_TASK_ENV_PASSTHROUGH: tuple[str, ...] = ("LD_LIBRARY_PATH", "CUDA_*", "NCCL_*", *PROXY_VARIABLES)
"""What a task gets of the agent's environment unless the agent's config says otherwise: the CUDA and NCCL
settings and library path GPU jobs need, and the proxies."""

RUNTIMES = ("process", "docker", "podman")
"""How an agent runs its tasks: as processes in its own Python (the default), or in containers of the task's
image on a Docker or Podman engine."""

AGENT_SPEC = {
    "task_env_passthrough": Field(list_of(string(nonempty=True)), default=lambda: list(DEFAULT_TASK_ENV_PASSTHROUGH)),
    "runtime": Field(choice(*RUNTIMES)),
    "container_engine_url": Field(string(nonempty=True)),
    "harness_bundles": Field(string(nonempty=True)),
}


@dataclass(frozen=True)
class AgentConfig:
    task_env_passthrough: tuple[str, ...] = DEFAULT_TASK_ENV_PASSTHROUGH
    runtime: str | None = None  # None: not given (`process` unless --runtime says otherwise)
    container_engine_url: str | None = None
    harness_bundles: str | None = None


def parse_agent_config(data: Any, source: str = "agent config") -> AgentConfig:
    problems = Problems()
    cfg = check_section(data, "", AGENT_SPEC, problems)
    if problems:
        first, *rest = problems.details
        raise ConfigError(f"invalid {source}: {first}", details=rest)
    return AgentConfig(task_env_passthrough=tuple(cfg["task_env_passthrough"]), runtime=cfg["runtime"],
                       container_engine_url=cfg["container_engine_url"], harness_bundles=cfg["harness_bundles"])


def load_agent_config(path: str | pathlib.Path) -> AgentConfig:
    """Read and validate an agent config file; ConfigError (one line naming the field) if it is wrong."""
    p = pathlib.Path(path)
    data = parse_yaml(read_config_file(p, "agent config"), f"agent config {p}")
    return parse_agent_config(data or {}, f"agent config {p}")
