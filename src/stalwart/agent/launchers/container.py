"""The container launchers: each allocation runs in a container of Docker or of Podman (its Docker-compatible API).

Both speak the Docker Engine API through the `docker` client library (`pip install stalwart[containers]`):
`DockerLauncher` to dockerd (`DOCKER_HOST`, else /var/run/docker.sock), `PodmanLauncher` to `podman system
service` (`CONTAINER_HOST`, else the user's $XDG_RUNTIME_DIR/podman/podman.sock, or /run/podman/podman.sock
for root). A run is created from `container_spec.create_body` (the rules every container keeps), attached
before it starts (no output is lost), fenced by a host watchdog (`watchdog.py`) when the spec asks, and handled
by `container_run.LaunchedContainer`. The containers an agent started carry its id as a label: that is how
`list_started` and a restarted agent's `remove_survivors` find them, with the id of its work directory
(`fencing.work_dir_id`): agents of other clusters or work directories that share the engine, even under the same
agent id, never take those containers for their own.
"""

from __future__ import annotations

import os
import pathlib
import secrets
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, ClassVar

from stalwart.agent.fencing import work_dir_id
from stalwart.agent.launchers.base import Harness, ImageError, ImageSource, Launcher, LaunchError, LaunchSpec, Started
from stalwart.agent.launchers.container_harness import ImagePythons, harness_in
from stalwart.agent.launchers.container_run import Fence, LaunchedContainer
from stalwart.agent.launchers.container_spec import (
    LABEL_AGENT,
    LABEL_ALLOCATION,
    LABEL_WORK_DIR,
    container_name,
    create_body,
)
from stalwart.agent.launchers.gpus import Engine

ENDED_STATES = {"exited", "dead", "stopped", "removing"}  # an engine's words for a container that no longer runs


class ContainerLauncher(Launcher):
    """Runs each allocation in a container of the engine at `engine_url` (see the module's docstring)."""

    engine: ClassVar[Engine]
    runs_images = True

    def __init__(self, work_root: pathlib.Path, agent_id: str, engine_url: str | None = None) -> None:
        url = engine_url or self.default_engine_url()
        super().__init__(work_root, agent_id, url)
        self.url = url  # the engine's address, never None here
        self._client: Any = None
        self._pythons = ImagePythons()

    @classmethod
    def default_engine_url(cls) -> str:
        raise NotImplementedError

    @property
    def engine_socket(self) -> str | None:
        return self.url.removeprefix("unix://") if self.url.startswith("unix://") else None

    def client(self) -> Any:
        """The engine's `docker.DockerClient` (its API version agreed on the first call)."""
        if self._client is None:
            try:
                import docker
            except ImportError:
                raise LaunchError(f"the {self.name} runtime needs the docker client library: pip install "
                                  "'stalwart[containers]'") from None
            try:
                self._client = docker.DockerClient(base_url=self.url, version="auto", timeout=60)
            except docker.errors.DockerException as err:
                raise LaunchError(f"cannot reach the {self.name} engine at {self.url}: {err}; start it, or "
                                  f"give the agent its socket") from None
        return self._client

    def start(self, spec: LaunchSpec) -> LaunchedContainer:
        from docker.errors import APIError, ImageNotFound

        body = create_body(spec, self.engine, self._owner(), self.engine_socket)
        api = self.client().api
        try:
            container_id = str(api.create_container_from_config(body, container_name(spec, secrets.token_hex(3)))["Id"])
        except ImageNotFound:
            raise ImageError(f"image {spec.image} is not present on this agent's {self.name} engine") from None
        except APIError as err:
            said = str(err.explanation or err)
            hint = "; install catatonit, the init Podman runs in each container" if "container-init" in said else ""
            raise LaunchError(f"{self.name} cannot create the container of allocation {spec.allocation_id}: "
                              f"{said}{hint}") from None
        fence = None
        try:
            fence = self._fence(container_id) if spec.fence else None
            attach = api.attach_socket(container_id, params={"stdout": 1, "stderr": 1, "stream": 1})
            api.start(container_id)
            pid = int(api.inspect_container(container_id)["State"].get("Pid") or 0)
        except BaseException as err:
            api.remove_container(container_id, force=True)
            if fence is not None:
                fence.release()
            if isinstance(err, APIError):
                raise LaunchError(f"{self.name} cannot start the container of allocation {spec.allocation_id}: "
                                  f"{err.explanation or err}") from None
            raise
        return LaunchedContainer(api, container_id, pid, attach, fence)

    def _fence(self, container_id: str) -> Fence:
        """Start the watchdog that removes the container when this agent dies (its stdin: our pipe's read end)."""
        read_fd, write_fd = os.pipe()
        try:
            watchdog = subprocess.Popen(
                [sys.executable, "-m", "stalwart.agent.launchers.watchdog", self.url,
                 str(self.client().api.api_version), container_id],
                stdin=read_fd, stdout=subprocess.DEVNULL, start_new_session=True)
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        return Fence(write_fd, watchdog)

    def _owner(self) -> dict[str, str]:
        """The labels naming this agent on the containers it starts."""
        return {LABEL_AGENT: self.agent_id, LABEL_WORK_DIR: work_dir_id(self.work_root)}

    def _labelled(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.client().api.containers(
            all=True, filters={"label": [f"{k}={v}" for k, v in self._owner().items()]})
        return found

    def list_started(self) -> list[Started]:
        return [Started(c["Labels"][LABEL_ALLOCATION], c["Id"]) for c in self._labelled()
                if str(c.get("State", "")).lower() not in ENDED_STATES]

    def remove_survivors(self, timeout: float = 10.0) -> list[str]:
        from docker.errors import APIError

        api = self.client().api
        survivors = self._labelled()
        for c in survivors:
            try:
                api.remove_container(c["Id"], force=True)
            except APIError as err:
                if getattr(err.response, "status_code", None) not in (404, 409):
                    raise
        deadline = time.monotonic() + timeout
        while self._labelled() and time.monotonic() < deadline:
            time.sleep(0.1)
        return sorted(c["Labels"][LABEL_ALLOCATION] for c in survivors
                      if str(c.get("State", "")).lower() not in ENDED_STATES)

    def prepare_image(self, source: ImageSource, report: Callable[[str], object]) -> None:
        from stalwart.agent.launchers.images import pull_image

        pull_image(self.client(), source, report)

    def harness(self, image: str | None) -> Harness:
        if image is None:
            raise LaunchError(f"the {self.name} runtime runs images: give environment.image")
        version, why = self._pythons.version(self.client().api, image)
        return harness_in(image, version, why, self.work_root)


class DockerLauncher(ContainerLauncher):
    """Containers of dockerd."""

    name = "docker"
    engine = "docker"

    @classmethod
    def default_engine_url(cls) -> str:
        return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


class PodmanLauncher(ContainerLauncher):
    """Containers of Podman, through `podman system service` (rootful, or rootless as the agent's own user)."""

    name = "podman"
    engine = "podman"

    @classmethod
    def default_engine_url(cls) -> str:
        if given := os.environ.get("CONTAINER_HOST"):
            return given
        if os.geteuid() == 0:
            return "unix:///run/podman/podman.sock"
        runtime_dir = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.geteuid()}"
        return f"unix://{runtime_dir}/podman/podman.sock"
