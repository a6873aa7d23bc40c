"""What only the container launchers do, on real engines (dockerd and Podman, started once per test run).

Each container carries its allocation's and agent's labels, the security rules and an init, and is gone once
waited for; an agent sees and removes only its own containers; a missing image is an ImageError; the harness
runs from its read-only bundle in an image whose Python Stalwart supports, and any other image is refused
naming the image, its Python and the supported versions. (The conformance suite checks the rest.)
"""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Iterator

import pytest

import container_servers
from launcher_targets import TARGETS, Runs, Target
from stalwart.agent import harness_bundle
from stalwart.agent.launchers import ContainerLauncher, ImageError, ImageSource, RunAs, Started

READY_THEN_SLEEP = 'import time\nprint("ready", flush=True)\nwhile True:\n    time.sleep(0.1)\n'
FAKE_PYTHON = "localhost/stalwart-test/python39:1"  # a python3 that says it is 3.9


@pytest.fixture(params=["docker", "podman"])
def target(request: pytest.FixtureRequest) -> Target:
    return TARGETS[request.param]()


@pytest.fixture
def launcher(target: Target, tmp_path: pathlib.Path) -> Iterator[ContainerLauncher]:
    launcher = target.launcher(tmp_path / "work", f"agent-{uuid.uuid4().hex[:8]}")
    assert isinstance(launcher, ContainerLauncher)
    yield launcher
    launcher.remove_survivors(timeout=5.0)


@pytest.fixture
def runs(target: Target, launcher: ContainerLauncher, tmp_path: pathlib.Path) -> Runs:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return Runs(target, launcher, scratch)


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("harness-bundles")  # one build per worker, not per test


def test_a_container_carries_its_labels_and_rules_and_is_gone_once_waited_for(runs: Runs,
                                                                              launcher: ContainerLauncher) -> None:
    from docker.errors import NotFound

    spec = runs.spec(runs.py(READY_THEN_SLEEP))
    run, out = runs.start(spec)
    out.wait_for("stdout", "ready")
    api = launcher.client().api
    info = api.inspect_container(run.id)
    assert info["Config"]["Labels"]["ai.stalwart.allocation"] == spec.allocation_id
    assert info["Config"]["Labels"]["ai.stalwart.agent"] == launcher.agent_id
    assert info["Config"]["Labels"]["ai.stalwart.work-dir"] == (launcher.work_root / "work-dir-id").read_text()
    host = info["HostConfig"]
    assert "no-new-privileges" in host["SecurityOpt"] and not host["Privileged"] and host["Init"]
    assert host["NetworkMode"] == "host" and info["State"]["Pid"] == run.pid > 0
    run.kill()
    assert run.wait() == -9
    with pytest.raises(NotFound):
        api.inspect_container(run.id)


def test_an_agent_sees_and_removes_only_its_own_containers(runs: Runs, target: Target,
                                                            launcher: ContainerLauncher,
                                                            tmp_path: pathlib.Path) -> None:
    # the other agent shares the engine and even the agent id (another cluster's "agent-0"), not the work directory
    other = target.launcher(tmp_path / "other", launcher.agent_id)
    mine_spec, other_spec = runs.spec(runs.py(READY_THEN_SLEEP)), runs.spec(runs.py(READY_THEN_SLEEP))
    mine, mine_out = runs.start(mine_spec)
    theirs = other.start(other_spec)
    try:
        mine_out.wait_for("stdout", "ready")
        assert launcher.list_started() == [Started(mine_spec.allocation_id, mine.id)]
        assert launcher.remove_survivors() == [mine_spec.allocation_id]
        assert mine.wait() == -9
        assert other.list_started() == [Started(other_spec.allocation_id, theirs.id)]
    finally:
        theirs.kill()
        assert theirs.wait() == -9


def test_a_missing_image_is_an_image_error(runs: Runs) -> None:
    spec = runs.spec(runs.py("pass"))
    absent = "localhost/stalwart-test/absent:1"
    with pytest.raises(ImageError, match=f"image {absent} is not present"):
        runs.launcher.start(type(spec)(**{**spec.__dict__, "image": absent}))


def test_a_present_image_is_ready_without_a_pull(target: Target, launcher: ContainerLauncher) -> None:
    lines: list[str] = []
    assert target.image is not None
    launcher.prepare_image(ImageSource(target.image), lines.append)
    assert any("present" in line for line in lines), lines


def test_the_harness_runs_from_its_read_only_bundle_in_an_image_with_a_supported_python(
        runs: Runs, target: Target, launcher: ContainerLauncher, bundles: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(harness_bundle.CACHE_ENV, str(bundles))
    harness = launcher.harness(target.image)
    assert harness.python == ("python3",) and dict(harness.env) == {"PYTHONPATH": harness_bundle.MOUNT_POINT}
    (mount,) = harness.mounts
    assert mount.read_only and mount.container_path == harness_bundle.MOUNT_POINT
    code = "import pydantic, stalwart.harness.launch as launch; print(launch.__file__)"
    spec = runs.spec([*harness.python, "-c", code], env=harness.env, mounts=harness.mounts, cwd="/",
                     user=RunAs(54321, 54321))  # the bundle is world-readable: any task's user runs it
    run, out = runs.start(spec)
    assert run.wait() == 0, out.all()
    assert out.all()[0].startswith(f"{harness_bundle.MOUNT_POINT}/stalwart/harness/launch.py")


def test_an_image_without_python3_is_refused_naming_it_and_the_supported_versions(
        launcher: ContainerLauncher) -> None:
    image = container_servers.servers().busybox_image
    assert image is not None
    with pytest.raises(ImageError) as refused:
        launcher.harness(image)
    said = str(refused.value)
    assert f"image {image} has no python3" in said and harness_bundle.supported_text() in said


def test_an_image_with_an_unsupported_python_is_refused_naming_its_version(launcher: ContainerLauncher) -> None:
    servers = container_servers.servers()
    servers.build_image(FAKE_PYTHON, {"/usr/local/bin/python3": b"#!/bin/sh\necho 3.9\n"}, base="busybox")
    with pytest.raises(ImageError) as refused:
        launcher.harness(FAKE_PYTHON)
    said = str(refused.value)
    assert f"image {FAKE_PYTHON} has Python 3.9" in said and harness_bundle.supported_text() in said
