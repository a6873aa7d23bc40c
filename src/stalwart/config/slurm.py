"""The Slurm resource manager's keys (`resource_manager: {type: slurm, ...}`, docs/slurm.md): Determined's where it
has them (`master_host`, `master_port`, `user_name`, `job_name_prefix`, `slot_type`, `gres_supported`,
`container_run_type`), and Stalwart's own (`agent_command`, `job_start_timeout`, `poll_interval`,
`job_output_dir`). `SlurmConfig` is what the master's Slurm manager reads."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from stalwart.config._schema import Field, Problems, boolean, choice, integer, list_of, number, string

SLOT_TYPES = ("cuda", "gpu", "rocm", "cpu")
CONTAINER_RUN_TYPES = ("podman", "singularity", "apptainer", "enroot")
SUPPORTED_CONTAINER_RUN_TYPES = ("podman",)
AGENT_MODULE = "stalwart.agent.slurm_job"


def _container_run_type(value: Any, path: str, problems: Problems) -> Any:
    """`podman` runs each job's task in its image (issue 28's launcher); the others Determined knew are refused."""
    if value in SUPPORTED_CONTAINER_RUN_TYPES:
        return value
    if value in CONTAINER_RUN_TYPES:
        problems.add(path, f"{value!r} is not supported; Stalwart runs Slurm jobs' images with podman (set "
                           "`container_run_type: podman`), or leave it out to run tasks as processes")
    else:
        problems.add(path, f"expected podman, got {value!r}")
    return value


_DETERMINED_LAUNCHER_KEYS = ("path", "ld_library_path", "tres_supported", "rendezvous_network_interface",
                              "proxy_network_interface", "sudo_authorized", "security", "apptainer_image_root",
                              "singularity_image_root", "partition_overrides")

SLURM_RM_KEYS: dict[str, Field] = {
    "master_host": Field(string(nonempty=True)),  # how jobs reach the master (default: its advertised URL)
    "master_port": Field(integer(1, 65535)),
    "master_scheme": Field(choice("http", "https")),
    "user_name": Field(string(nonempty=True)),  # jobs of users with no linked OS user run as this one
    "group_name": Field(string()),
    "job_name_prefix": Field(string(nonempty=True)),
    "slot_type": Field(choice(*SLOT_TYPES)),
    "gres_supported": Field(boolean()),
    "container_run_type": Field(_container_run_type),
    "agent_command": Field(list_of(string(nonempty=True))),
    "job_start_timeout": Field(number(minimum=1)),
    "poll_interval": Field(number(minimum=0)),
    "job_output_dir": Field(string(nonempty=True)),
    # Determined's launcher keys that have no meaning here (its launcher service, its own paths)
    **{k: Field(lambda v, p, pr: v) for k in _DETERMINED_LAUNCHER_KEYS},
}
"""The keys a `type: slurm` resource manager section adds to the agent manager's."""


@dataclass(frozen=True)
class SlurmConfig:
    """The Slurm manager's settings. `agent_command` starts the one-shot agent inside each job (the job adds its
    arguments); the default is this master's own Python, for a login node whose install the compute nodes share."""

    master_host: str | None = None
    master_port: int | None = None
    master_scheme: str = "http"
    user_name: str | None = None
    job_name_prefix: str = "stalwart-"
    slot_type: str = "cuda"
    gres_supported: bool = True
    container_run_type: str | None = None
    agent_command: tuple[str, ...] = field(default=(sys.executable, "-m", AGENT_MODULE))
    job_start_timeout: float = 300.0
    poll_interval: float = 2.0
    job_output_dir: str | None = None

    @property
    def cpu_slots(self) -> bool:
        return self.slot_type == "cpu"

    @staticmethod
    def of(rm: dict[str, Any]) -> SlurmConfig:
        given = {k: rm[k] for k in ("master_host", "master_port", "master_scheme", "user_name", "job_name_prefix",
                                    "slot_type", "gres_supported", "container_run_type", "job_start_timeout",
                                    "poll_interval", "job_output_dir") if rm.get(k) is not None}
        if rm.get("agent_command"):
            given["agent_command"] = tuple(rm["agent_command"])
        if given.get("slot_type") == "gpu":
            given["slot_type"] = "cuda"
        return SlurmConfig(**given)
