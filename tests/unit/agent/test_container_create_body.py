"""The container launchers' create request, checked without an engine: GPUs by host id with CUDA_VISIBLE_DEVICES
counting from 0 inside, the rules every container keeps (labels, no-new-privileges, an init, no root unless
allowed, no engine socket), and each engine's default address."""

from __future__ import annotations

import pathlib

import pytest

from stalwart.agent.launchers import (
    ContainerOptions,
    Device,
    DockerLauncher,
    LaunchError,
    LaunchSpec,
    Mount,
    PodmanLauncher,
    RunAs,
)
from stalwart.agent.launchers.container_run import exit_code
from stalwart.agent.launchers.container_spec import create_body
from stalwart.agent.launchers.gpus import gpu_access

AGENT = {"ai.stalwart.agent": "agent-1", "ai.stalwart.work-dir": "0f1e"}  # who starts it


def _spec(**fields: object) -> LaunchSpec:
    base: dict[str, object] = {"allocation_id": "7.1.0", "argv": ("python3", "-m", "stalwart.harness.launch"),
                               "cwd": "/work/7.1.0", "env": {"CUDA_VISIBLE_DEVICES": "1,3", "A": "b=c"},
                               "user": RunAs(1000, 1000), "image": "team/trainer:1"}
    return LaunchSpec(**{**base, **fields})  # type: ignore[arg-type]  # a test's own fields, by name


def test_docker_asks_for_the_slots_gpus_by_host_id_and_counts_them_from_zero_inside() -> None:
    access = gpu_access("docker", (1, 3))
    assert access.device_requests == [{"Driver": "nvidia", "Count": 0, "DeviceIDs": ["1", "3"],
                                       "Capabilities": [["gpu"]], "Options": {}}]
    assert access.devices == [] and access.env == {"CUDA_VISIBLE_DEVICES": "0,1"}
    body = create_body(_spec(container=ContainerOptions(gpus=(1, 3))), "docker", AGENT, None)
    assert body["HostConfig"]["DeviceRequests"] == access.device_requests
    assert "CUDA_VISIBLE_DEVICES=0,1" in body["Env"] and "CUDA_VISIBLE_DEVICES=1,3" not in body["Env"]


def test_podman_names_the_slots_gpus_as_cdi_devices() -> None:
    access = gpu_access("podman", (1, 3))
    assert [d["PathOnHost"] for d in access.devices] == ["nvidia.com/gpu=1", "nvidia.com/gpu=3"]
    assert access.device_requests == [] and access.env == {"CUDA_VISIBLE_DEVICES": "0,1"}
    body = create_body(_spec(container=ContainerOptions(gpus=(1, 3))), "podman", AGENT, None)
    assert body["HostConfig"]["Devices"] == access.devices and "CUDA_VISIBLE_DEVICES=0,1" in body["Env"]


def test_no_gpus_means_no_request_and_the_specs_environment_as_it_is() -> None:
    body = create_body(_spec(), "docker", AGENT, None)
    assert body["HostConfig"]["DeviceRequests"] == [] and body["HostConfig"]["Devices"] == []
    assert body["Env"] == ["CUDA_VISIBLE_DEVICES=1,3", "A=b=c"]


def test_every_container_keeps_the_rules() -> None:
    options = ContainerOptions(devices=(Device("/dev/fuse", "/dev/fuse", "rw"),), add_capabilities=("SYS_PTRACE",),
                               drop_capabilities=("NET_RAW",))
    body = create_body(_spec(container=options, shm_size=2**30, mounts=(Mount("/data", "/data", read_only=False),)),
                       "docker", AGENT, None)
    host = body["HostConfig"]
    assert body["Labels"] == {"ai.stalwart.allocation": "7.1.0", "ai.stalwart.agent": "agent-1",
                              "ai.stalwart.work-dir": "0f1e"}
    assert body["Entrypoint"] == ["python3", "-m", "stalwart.harness.launch"] and "Cmd" not in body
    assert body["User"] == "1000:1000" and body["WorkingDir"] == "/work/7.1.0"
    assert host["SecurityOpt"] == ["no-new-privileges"] and host["Privileged"] is False and host["Init"] is True
    assert host["NetworkMode"] == "host" and host["ShmSize"] == 2**30
    assert host["CapAdd"] == ["SYS_PTRACE"] and host["CapDrop"] == ["NET_RAW"]
    assert host["Devices"] == [{"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse", "CgroupPermissions": "rw"}]
    assert host["Mounts"] == [{"Type": "bind", "Source": "/data", "Target": "/data", "ReadOnly": False}]
    assert "PortBindings" not in host  # the host's network: nothing to publish


def test_ports_are_published_only_off_the_hosts_network() -> None:
    options = ContainerOptions(network_mode="bridge", ports={"tensorboard": 6006})
    body = create_body(_spec(container=options), "docker", AGENT, None)
    assert body["ExposedPorts"] == {"6006/tcp": {}}
    assert body["HostConfig"]["PortBindings"] == {"6006/tcp": [{"HostIp": "", "HostPort": "6006"}]}


def test_root_is_refused_unless_the_pool_allows_root_tasks() -> None:
    with pytest.raises(LaunchError, match="non-root OS user.*allow root tasks"):
        create_body(_spec(user=RunAs(0, 0)), "docker", AGENT, None)
    assert create_body(_spec(user=RunAs(0, 0), container=ContainerOptions(allow_root=True)), "docker", AGENT,
                       None)["User"] == "0:0"


def test_a_mount_that_holds_the_engines_socket_is_refused(tmp_path: pathlib.Path) -> None:
    socket = tmp_path / "engine" / "docker.sock"
    socket.parent.mkdir()
    socket.touch()
    for host in (str(socket), str(socket.parent), "/var/run", "/"):
        with pytest.raises(LaunchError, match="would expose the container engine's socket"):
            create_body(_spec(mounts=(Mount(host, "/x"),)), "docker", AGENT, str(socket))
    create_body(_spec(mounts=(Mount(str(tmp_path / "data"), "/x"),)), "docker", AGENT, str(socket))


def test_a_spec_without_an_image_is_refused() -> None:
    with pytest.raises(LaunchError, match="names no image"):
        create_body(_spec(image=None), "podman", AGENT, None)


def test_an_engines_128_plus_n_is_a_death_by_signal_n() -> None:
    assert [exit_code(s) for s in (0, 1, 127, 128, 137, 143, 192, 255)] == [0, 1, 127, 128, -9, -15, -64, 255]


def test_each_engines_default_address(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("CONTAINER_HOST", raising=False)
    assert DockerLauncher(tmp_path, "a").url == "unix:///var/run/docker.sock"
    monkeypatch.setenv("DOCKER_HOST", "unix:///tmp/d.sock")
    assert DockerLauncher(tmp_path, "a").url == "unix:///tmp/d.sock"
    assert DockerLauncher(tmp_path, "a", engine_url="tcp://10.0.0.1:2375").url == "tcp://10.0.0.1:2375"
    monkeypatch.setenv("CONTAINER_HOST", "unix:///tmp/p.sock")
    assert PodmanLauncher(tmp_path, "a").url == "unix:///tmp/p.sock"
    monkeypatch.delenv("CONTAINER_HOST")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert PodmanLauncher(tmp_path, "a").url == "unix:///run/user/1000/podman/podman.sock"
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert PodmanLauncher(tmp_path, "a").url == "unix:///run/podman/podman.sock"
