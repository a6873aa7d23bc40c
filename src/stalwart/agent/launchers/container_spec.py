"""A `LaunchSpec` as a Docker Engine API container-create body, with the rules every container keeps.

Every container: runs the spec's argv exactly (the image's entrypoint and command replaced), with the spec's
environment, working directory and mounts; as `uid:gid` with no supplementary groups, never as root unless
the pool allows root tasks; with `no-new-privileges`, never privileged, never with the engine's socket
mounted; under a small init (Docker's `docker-init`, Podman's `catatonit`) that passes signals on, reports a
death by signal N as 128 + N and ends with the entrypoint; labelled with its allocation, its agent and that
agent's work directory; on the host's network unless the options say otherwise; with its output only on the
attach stream (no log driver: the agent keeps the logs).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from stalwart.agent.launchers.base import ContainerOptions, LaunchError, LaunchSpec, RunAs
from stalwart.agent.launchers.gpus import Engine, gpu_access

LABEL_ALLOCATION = "ai.stalwart.allocation"
LABEL_AGENT = "ai.stalwart.agent"
LABEL_WORK_DIR = "ai.stalwart.work-dir"  # the starting agent's work directory's id (fencing.work_dir_id)
WELL_KNOWN_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock",
                      "/run/containerd/containerd.sock")


def run_as(spec: LaunchSpec, options: ContainerOptions) -> RunAs:
    """The uid:gid the container runs as: the spec's, else the agent's own; never root unless allowed."""
    user = spec.user or RunAs(os.getuid(), os.getgid())
    if user.uid == 0 and not options.allow_root:
        raise LaunchError(
            f"allocation {spec.allocation_id} would run as root in its container: link the task's owner or "
            "workspace to a non-root OS user (the agent-user link), or allow root tasks on this pool "
            "(security.allow_root_tasks)")
    return user


def refuse_engine_socket(spec: LaunchSpec, engine_socket: str | None) -> None:
    """LaunchError if a mount would show the container an engine's socket (it would own the host)."""
    sockets = {os.path.realpath(s) for s in (*WELL_KNOWN_SOCKETS, *([engine_socket] if engine_socket else []))}
    for mount in spec.mounts:
        host = os.path.realpath(mount.host_path)
        exposed = sorted(s for s in sockets if s == host or s.startswith(host.rstrip("/") + "/"))
        if exposed:
            raise LaunchError(f"mount {mount.host_path} -> {mount.container_path} would expose the container "
                              f"engine's socket {exposed[0]} to allocation {spec.allocation_id}; mount a "
                              "directory that does not hold it")


def container_name(spec: LaunchSpec, suffix: str) -> str:
    """A readable, unique container name: `stalwart-<allocation>-<suffix>` in the characters engines allow."""
    return "stalwart-" + re.sub(r"[^A-Za-z0-9_.-]", "-", spec.allocation_id)[:64] + f"-{suffix}"


def _host_config(spec: LaunchSpec, options: ContainerOptions, engine: Engine) -> dict[str, Any]:
    gpus = gpu_access(engine, options.gpus)
    host: dict[str, Any] = {
        "Init": True,
        "NetworkMode": options.network_mode,
        "SecurityOpt": ["no-new-privileges"],
        "Privileged": False,
        "CapAdd": list(options.add_capabilities),
        "CapDrop": list(options.drop_capabilities),
        "Mounts": [{"Type": "bind", "Source": m.host_path, "Target": m.container_path, "ReadOnly": m.read_only}
                   for m in spec.mounts],
        "Devices": [{"PathOnHost": d.host_path, "PathInContainer": d.container_path,
                     "CgroupPermissions": d.permissions} for d in options.devices] + gpus.devices,
        "DeviceRequests": gpus.device_requests,
        "LogConfig": {"Type": "none", "Config": {}},
    }
    if spec.shm_size is not None:
        host["ShmSize"] = spec.shm_size
    if options.ports and options.network_mode != "host":
        host["PortBindings"] = {f"{port}/tcp": [{"HostIp": "", "HostPort": str(port)}]
                                for port in options.ports.values()}
    return host


def create_body(spec: LaunchSpec, engine: Engine, owner: Mapping[str, str],
                engine_socket: str | None) -> dict[str, Any]:
    """The body of `POST /containers/create` for `spec` (LaunchError when a rule refuses it); `owner`: the labels
    naming the agent that starts it."""
    if spec.image is None:
        raise LaunchError(f"allocation {spec.allocation_id} names no image: a container launcher runs images; "
                          "give environment.image, or run this agent with --runtime process")
    if not spec.argv:
        raise LaunchError(f"allocation {spec.allocation_id} has an empty argv: nothing to run")
    options = spec.container or ContainerOptions()
    user = run_as(spec, options)
    refuse_engine_socket(spec, engine_socket)
    env = {**spec.env, **gpu_access(engine, options.gpus).env}
    body: dict[str, Any] = {
        "Image": spec.image,
        "Entrypoint": list(spec.argv),
        "Env": [f"{k}={v}" for k, v in env.items()],
        "WorkingDir": spec.cwd,
        "User": f"{user.uid}:{user.gid}",
        "Labels": {LABEL_ALLOCATION: spec.allocation_id, **owner},
        "AttachStdin": False, "AttachStdout": True, "AttachStderr": True, "Tty": False, "OpenStdin": False,
        "HostConfig": _host_config(spec, options, engine),
    }
    if options.ports and options.network_mode != "host":
        body["ExposedPorts"] = {f"{port}/tcp": {} for port in options.ports.values()}
    return body
