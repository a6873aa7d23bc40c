"""What the launcher conformance suite runs on: one `Target` per launcher in `agent.launchers.LAUNCHERS`.

A target says how to run Python inside that launcher's runs and what its runtime adds of its own. A launcher is
one entry in `TARGETS`: a function that returns its target, or skips when its engine is missing on this
machine. The container targets run the tests' Debian python image on the engines `container_servers` starts
once per run. `Runs` starts runs the way every test does (a container run may run as root: the scratch
directory is root's), and `Output` reads both streams of a run as they arrive.
"""

from __future__ import annotations

import pathlib
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pytest

import container_servers
from stalwart.agent.launchers import LAUNCHERS, ContainerOptions, Launched, Launcher, LaunchSpec, Mount, RunAs


@dataclass(frozen=True)
class Target:
    """How the suite runs on one launcher."""

    name: str  # its key in LAUNCHERS
    python: str  # a Python interpreter inside its runs
    image: str | None = None  # what its runs run in (None: processes)
    engine_env: frozenset[str] = frozenset()  # variables the runtime adds to a run's environment besides the spec's
    container: bool = False  # mounts and shm size apply (for processes they are no-ops)
    engine_url: str | None = None  # the container engine the launcher talks to

    def launcher(self, work_root: pathlib.Path, agent_id: str) -> Launcher:
        if self.engine_url is None:
            return LAUNCHERS[self.name](work_root, agent_id)
        return LAUNCHERS[self.name](work_root, agent_id, engine_url=self.engine_url)


def process_target() -> Target:
    return Target("process", sys.executable)


def _container_target(name: str, engine_env: set[str]) -> Target:
    if reason := container_servers.missing(name) or container_servers.missing("images"):
        pytest.skip(reason)
    servers = container_servers.servers()
    url = servers.docker_url if name == "docker" else servers.podman_url
    assert url is not None and servers.python_image is not None
    return Target(name, "python3", servers.python_image, frozenset(engine_env), container=True, engine_url=url)


def docker_target() -> Target:
    return _container_target("docker", {"HOSTNAME", "HOME"})


def podman_target() -> Target:
    return _container_target("podman", {"HOSTNAME", "HOME", "TERM", "container"})


TARGETS: dict[str, Callable[[], Target]] = {"process": process_target, "docker": docker_target,
                                            "podman": podman_target}


class Output:
    """Both streams of a run, read by two threads as they arrive; `chunks` keeps each stream's chunks in order."""

    def __init__(self, run: Launched) -> None:
        self.chunks: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
        self._changed = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(run, s), daemon=True) for s in self.chunks]
        for r in self._readers:
            r.start()

    def _read(self, run: Launched, stream: str) -> None:
        for chunk in run.output("stdout" if stream == "stdout" else "stderr"):
            with self._changed:
                self.chunks[stream].append(chunk)
                self._changed.notify_all()

    def text(self, stream: str) -> str:
        with self._changed:
            return b"".join(self.chunks[stream]).decode()

    def wait_for(self, stream: str, text: str, timeout: float = 30.0) -> None:
        """Wait until `text` has arrived on `stream` (the run still running, as a rule)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while text not in b"".join(self.chunks[stream]).decode(errors="replace"):
                left = deadline - time.monotonic()
                assert left > 0, f"{text!r} not seen on {stream} in {timeout} s: {self.chunks[stream][-3:]!r}"
                self._changed.wait(left)

    def all(self, timeout: float = 30.0) -> tuple[str, str]:
        """Both streams once they have ended."""
        for r in self._readers:
            r.join(timeout)
            assert not r.is_alive(), "a stream did not end with its run"
        return self.text("stdout"), self.text("stderr")


@dataclass
class Runs:
    """Starts runs on `launcher` for `target`, in `scratch` (a directory mounted at its own path)."""

    target: Target
    launcher: Launcher
    scratch: pathlib.Path

    def spec(self, argv: list[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
             user: RunAs | None = None, mounts: tuple[Mount, ...] = (), shm_size: int | None = None,
             fence: bool = False, options: ContainerOptions | None = None) -> LaunchSpec:
        own = Mount(str(self.scratch), str(self.scratch), read_only=False)
        if options is None and self.target.container:
            options = ContainerOptions(allow_root=True)
        return LaunchSpec(uuid.uuid4().hex, tuple(argv), cwd or str(self.scratch), dict(env or {}), user=user,
                          mounts=(own, *mounts), shm_size=shm_size, image=self.target.image, fence=fence,
                          container=options)

    def py(self, code: str) -> list[str]:
        """The argv that runs `code` with the target's Python."""
        return [self.target.python, "-c", code]

    def start(self, spec: LaunchSpec) -> tuple[Launched, Output]:
        run = self.launcher.start(spec)
        return run, Output(run)
