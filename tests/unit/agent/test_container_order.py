"""A start order's container block in launcher terms (agent/container_order.py), and the run a TrialProcess asks
its launcher for: in the image on a container runtime, as a process otherwise."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

import pytest

from stalwart.agent.container_order import container_run, image_of, storage_mounts, with_path_first
from stalwart.agent.launchers import Device, ImageError, Mount, ProcessLauncher
from stalwart.agent.launchers.container import DockerLauncher
from stalwart.agent.process import TrialProcess

SECRET = "s3cret-pw"


def _order(**container: Any) -> dict[str, Any]:
    return {
        "allocation_id": "a" * 32, "trial_id": 7, "slot_ids": [1, 3], "env": {}, "info": {
            "trial": {"config": {"checkpoint_storage": {"type": "shared_fs", "host_path": "/srv/ckpt"}}}},
        "container": container or None,
    }


def test_the_order_becomes_the_launchers_terms() -> None:
    order = _order(image="reg.example:5000/team/torch:2", force_pull=True,
                   registry_auth={"username": "u", "password": SECRET, "email": None},
                   bind_mounts=[{"host_path": "/data", "container_path": "/mnt/data", "read_only": True}],
                   devices=[{"host_path": "/dev/fuse", "container_path": "/dev/fuse", "cgroup_permissions": "rw"}],
                   shm_size=1 << 30, network_mode="none", add_capabilities=["SYS_PTRACE"],
                   drop_capabilities=["NET_RAW"], ports={"web": 8080}, allow_root=False)
    run = container_run(order, [1, 3], "cuda")
    assert run.source.image == "reg.example:5000/team/torch:2" and run.source.force_pull
    assert run.source.registry_auth == {"username": "u", "password": SECRET}
    assert SECRET not in repr(run.source)  # a secret: never in a repr, so never in a log line made from one
    assert run.options.gpus == (1, 3) and run.options.network_mode == "none"
    assert run.options.devices == (Device("/dev/fuse", "/dev/fuse", "rw"),)
    assert run.options.add_capabilities == ("SYS_PTRACE",) and run.options.drop_capabilities == ("NET_RAW",)
    assert run.options.ports == {"web": 8080} and not run.options.allow_root
    assert run.mounts == (Mount("/data", "/mnt/data", True), Mount("/srv/ckpt", "/srv/ckpt", False))
    assert run.shm_size == 1 << 30


def test_cpu_slots_are_no_gpus_and_host_networking_is_the_default() -> None:
    run = container_run(_order(image="python:3.11"), [0], "cpu")
    assert run.options.gpus == () and run.options.network_mode == "host"
    assert run.source.registry_auth is None and run.shm_size is None


def test_the_checkpoint_storage_is_mounted_unless_a_bind_mount_covers_it() -> None:
    order = _order(image="x")
    assert storage_mounts(order, ()) == (Mount("/srv/ckpt", "/srv/ckpt", False),)
    assert storage_mounts(order, (Mount("/elsewhere", "/srv/ckpt"),)) == ()
    assert storage_mounts({"info": {}}, ()) == ()  # a command: no checkpoint storage


def test_the_harness_comes_first_on_the_path() -> None:
    assert with_path_first({}, "PYTHONPATH", "/h") == {"PYTHONPATH": "/h"}
    assert with_path_first({"PYTHONPATH": "/mine"}, "PYTHONPATH", "/h") == {"PYTHONPATH": "/h:/mine"}


def _trial(tmp_path: pathlib.Path, order: dict[str, Any], lines: list[tuple[dict[str, Any], str]]) -> TrialProcess:
    return TrialProcess(order, tmp_path, "agent-0", lambda meta, run: lines.extend((meta, t) for _, t in run),
                        lambda _p: None, launcher=ProcessLauncher(tmp_path, "agent-0"))


def test_a_process_agent_runs_its_own_python_and_says_the_image_is_not_used(tmp_path: pathlib.Path) -> None:
    lines: list[tuple[dict[str, Any], str]] = []
    spec = _trial(tmp_path, _order(image="team/torch:2"), lines).launch_spec()
    assert spec.argv[0] == sys.executable and spec.image is None and spec.container is None
    [(meta, text)] = lines
    assert meta["source"] == "agent" and meta["level"] == "WARNING" and "team/torch:2 is not used" in text


def test_a_container_agent_refuses_an_order_without_an_image(tmp_path: pathlib.Path) -> None:
    """Refused before the engine is asked anything (there is none at that address)."""
    order = _order()
    proc = TrialProcess(order, tmp_path, "agent-0", lambda *_: None, lambda _p: None,
                        launcher=DockerLauncher(tmp_path, "agent-0", "unix:///nonexistent.sock"))
    with pytest.raises(ImageError, match="no image for this task.*environment.image"):
        proc.launch_spec()
    assert image_of(order) is None
