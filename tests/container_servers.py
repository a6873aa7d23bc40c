"""Container servers for the tests: started lazily, once per pytest run (xdist workers included), stopped at its end.

The run directory (named in `STALWART_TEST_CONTAINERS`), its lock and the reaper that cleans up after a dead
controller are `once_per_run`'s (`RUN`). The first test that needs a server calls `servers()`: under the run's lock
it starts them all (dockerd, Podman's Docker-compatible service, a registry with basic auth: `container_daemons`),
imports the images into both engines (`container_images`) and records them in `<run dir>/servers.json`; every later
call, in any worker, reads that record. At the run's end `stop_all` stops what was recorded and removes the run
directory.

Fixtures (session scope): `container_servers`, `docker_url`, `podman_url`, `registry`. Each skips, saying what
to install, only when this machine lacks what it needs (the binaries; root for dockerd and debootstrap). For
further images on the python image's root, `build_image(engine_urls, name, extra_files)`.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import pytest

from container_daemons import (
    Registry,
    free_port,
    podman_env,
    start_dockerd,
    start_podman,
    start_registry,
    stop_recorded,
)
from container_images import build_image as _build_image, busybox_tar, import_image, python_rootfs
from once_per_run import RunDirectory, locked

RUN = RunDirectory("STALWART_TEST_CONTAINERS", "stalwart-ct-", "container_servers", "the container servers")
PYTHON_IMAGE = "localhost/stalwart-test/python:bookworm"
BUSYBOX_IMAGE = "localhost/stalwart-test/busybox:latest"
NEEDS = {  # what each part needs on this machine, and the Debian package that has it
    "docker": {"dockerd": "docker.io", "runc": "runc"},
    "podman": {"podman": "podman", "runc": "runc", "catatonit": "catatonit"},  # catatonit: Podman's --init
    "registry": {"docker-registry": "docker-registry", "htpasswd": "apache2-utils"},
    "images": {"debootstrap": "debootstrap", "busybox": "busybox-static", "tar": "tar"},
}


@dataclass(frozen=True)
class Servers:
    """What `servers()` started for this run (an engine this machine cannot run is None)."""

    run_dir: pathlib.Path
    docker_url: str | None
    podman_url: str | None
    registry: Registry | None
    python_image: str | None  # Debian bookworm's python3 (3.11), in both engines
    busybox_image: str | None  # /bin/busybox and /bin/sh only, in both engines
    rootfs: pathlib.Path | None  # the python image's root: further images build on it
    python_tar: pathlib.Path | None

    @property
    def engine_urls(self) -> list[str]:
        return [url for url in (self.docker_url, self.podman_url) if url]

    def podman_env(self) -> dict[str, str]:
        """The environment for a `podman` CLI call on this run's Podman (its storage and configuration)."""
        assert self.registry is not None
        return podman_env(self.run_dir, self.registry.host)

    def build_image(self, name: str, extra_files: Mapping[str, pathlib.Path | bytes], base: str = "python") -> str:
        """The python image (or with `base="busybox"` the busybox one) plus `extra_files` (path in image -> host
        file/directory, or bytes), as `name` in both engines."""
        assert self.python_tar is not None, "no images on this machine"
        base_tar = self.python_tar if base == "python" else self.run_dir / "busybox.tar"
        return _build_image(self.engine_urls, name, extra_files, base_tar)


def build_image(engine_urls: Iterable[str], name: str, extra_files: Mapping[str, pathlib.Path | bytes]) -> str:
    """The python image plus `extra_files`, imported as `name` into each of `engine_urls`."""
    base = servers().python_tar
    assert base is not None, "no python image on this machine"
    return _build_image(engine_urls, name, extra_files, base)


def missing(part: str) -> str | None:
    """Why this machine cannot run `part` of the servers (what to install), or None."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    absent = [f"{binary} (apt-get install {package})" for binary, package in NEEDS[part].items()
              if shutil.which(binary, path=path) is None]
    if absent:
        return f"the container tests' {part} needs " + ", ".join(absent)
    if part in ("docker", "images") and os.geteuid() != 0:
        return f"the container tests' {part} needs root (dockerd and debootstrap run as root)"
    return None


def servers() -> Servers:
    """This run's servers, started now by whoever asks first (once per run, across xdist workers)."""
    run_dir = RUN.path()
    with locked(run_dir):
        state, failed = run_dir / "servers.json", run_dir / "failed"
        if state.exists():
            return _load(json.loads(state.read_text()))
        if failed.exists():
            raise RuntimeError(f"the container servers failed to start earlier in this run: {failed.read_text()}")
        try:
            started = _start(run_dir)
        except BaseException as err:
            failed.write_text(f"{type(err).__name__}: {err}")
            raise
        fd = os.open(state, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the registry's password is in it
        with os.fdopen(fd, "w") as f:
            json.dump(asdict(started), f, default=str)
        return started


def _load(raw: dict[str, object]) -> Servers:
    def text(key: str) -> str | None:
        return str(raw[key]) if raw.get(key) else None

    def path(key: str) -> pathlib.Path | None:
        return pathlib.Path(str(raw[key])) if raw.get(key) else None

    registry = raw.get("registry")
    return Servers(pathlib.Path(str(raw["run_dir"])), text("docker_url"), text("podman_url"),
                   Registry(**registry) if isinstance(registry, dict) else None, text("python_image"),
                   text("busybox_image"), path("rootfs"), path("python_tar"))


def _start(run_dir: pathlib.Path) -> Servers:
    """Start what this machine can run, all at once; import the images into the engines."""
    began = time.monotonic()
    RUN.start_reaper(run_dir)
    port = free_port()  # the registry's, known before Podman starts (its registries.conf names it)
    can = {part: missing(part) is None for part in NEEDS}
    with ThreadPoolExecutor(4) as pool:
        made = pool.submit(python_rootfs, run_dir) if can["images"] else None
        registry = pool.submit(start_registry, run_dir, port) if can["registry"] else None
        docker = pool.submit(start_dockerd, run_dir) if can["docker"] else None
        podman = pool.submit(start_podman, run_dir, f"127.0.0.1:{port}") if can["podman"] else None
        docker_url, podman_url = docker.result() if docker else None, podman.result() if podman else None
        engines = [url for url in (docker_url, podman_url) if url]
        rootfs = python_tar = None
        if made:
            rootfs, python_tar = made.result()
            imports = [pool.submit(import_image, engines, python_tar, PYTHON_IMAGE),
                       pool.submit(import_image, engines, busybox_tar(run_dir), BUSYBOX_IMAGE)]
            for done in imports:
                done.result()
        started = Servers(run_dir, docker_url, podman_url, registry.result() if registry else None,
                          PYTHON_IMAGE if made else None, BUSYBOX_IMAGE if made else None, rootfs, python_tar)
    (run_dir / "startup-seconds").write_text(f"{time.monotonic() - began:.1f}\n")
    return started


def stop_all(run_dir: pathlib.Path) -> None:
    """Stop every server of the run and remove its directory (idempotent)."""
    if not run_dir.exists():
        return
    with locked(run_dir):
        sockets = [run_dir / "docker" / "docker.sock", run_dir / "podman" / "podman.sock"]
        stop_recorded(run_dir, [f"unix://{s}" for s in sockets if s.exists()])


# -- the pytest plugin -----------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    RUN.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    RUN.unconfigure(config)


def _servers_for(part: str) -> Servers:
    for need in (part, "images"):
        if reason := missing(need):
            pytest.skip(reason)
    return servers()


@pytest.fixture(scope="session")
def container_servers() -> Servers:
    return servers()


@pytest.fixture(scope="session")
def docker_url() -> str:
    url = _servers_for("docker").docker_url
    assert url is not None
    return url


@pytest.fixture(scope="session")
def podman_url() -> str:
    url = _servers_for("podman").podman_url
    assert url is not None
    return url


@pytest.fixture(scope="session")
def registry() -> Registry:
    if reason := missing("registry"):
        pytest.skip(reason)
    started = servers().registry
    assert started is not None
    return started

