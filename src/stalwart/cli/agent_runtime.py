"""How `stalwart agent run` runs its tasks: the runtime (processes, or containers on Docker or Podman) from its
flags and config file, the engine a container runtime talks to (its launcher knows each engine's default
socket) and a check that it answers before the agent starts; and `stalwart agent harness-bundle`, which builds
Stalwart's harness for containers' Pythons beforehand (for agents that reach no package index)."""

from __future__ import annotations

import os
import pathlib
import re
from dataclasses import dataclass

import click

from stalwart.agent import harness_bundle
from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.cli import home as homes, output
from stalwart.config.agent import RUNTIMES, AgentConfig

PING_TIMEOUT_S = 5
HARNESS_BUNDLES_ENV = harness_bundle.CACHE_ENV  # `agent run --harness-bundles DIR`

START_ENGINE = {
    "docker": "start it (`systemctl start docker`, or `dockerd &` as root)",
    "podman": ("start Podman's API service: `systemctl start podman.socket` as root (it listens on "
               "/run/podman/podman.sock), `systemctl --user start podman.socket` for rootless Podman "
               "($XDG_RUNTIME_DIR/podman/podman.sock), or without systemd `podman system service --time=0 "
               "unix:///run/podman/podman.sock &`"),
}


@dataclass(frozen=True)
class Runtime:
    """The agent's runtime and, for a container runtime, its engine's address when one is given (None: the
    launcher's default for that engine)."""

    name: str
    engine_url: str | None = None


def choose(runtime: str | None, engine_url: str | None, harness_bundles: str | None,
           config: AgentConfig) -> Runtime:
    """The runtime the flags (else the config file, else `process`) name, with the engine's address they give (a
    bare socket path made a unix:// URL). Pre-built harness bundles (--harness-bundles, `harness_bundles`) are
    where the container launcher looks for them."""
    name = runtime or config.runtime or "process"
    if name not in RUNTIMES:  # click and the config's schema check both; this is for callers of choose()
        raise InvalidRequest(f"--runtime: unknown runtime {name!r}; choose one of {', '.join(RUNTIMES)}")
    bundles = harness_bundles or config.harness_bundles
    if bundles:
        os.environ[harness_bundle.CACHE_ENV] = str(pathlib.Path(bundles).expanduser().resolve())
    if name == "process":
        return Runtime(name)
    given = engine_url or config.container_engine_url
    return Runtime(name, f"unix://{given}" if given and given.startswith("/") else given)


def check_engine(runtime: str, url: str | None) -> None:
    """Ping the engine at `url` (the container launcher's: the one given, else $DOCKER_HOST or $CONTAINER_HOST,
    else the engine's default socket); InvalidStateError naming the socket and how to start the engine if it
    does not answer (or if the Docker Engine API's client is not installed). A process runtime has no engine."""
    if runtime == "process" or url is None:
        return
    try:
        import docker
    except ImportError as err:
        raise InvalidStateError(f"--runtime {runtime} needs the Docker Engine API's client, which speaks to Podman "
                                f"too: pip install 'stalwart[containers]'") from err
    try:
        client = docker.DockerClient(base_url=url, timeout=PING_TIMEOUT_S)
        try:
            client.ping()
        finally:
            client.close()
    except (docker.errors.DockerException, OSError) as err:
        raise InvalidStateError(
            f"the agent's runtime is {runtime}, but no {runtime.capitalize()} engine answers at {url} "
            f"({_why(err)}): {START_ENGINE[runtime]}; or give the engine's socket with --engine-url "
            f"(`container_engine_url` in the agent config file). The agent did not start.") from err


def _why(err: Exception) -> str:
    """Why an engine did not answer, in a few words."""
    text = str(err)
    for pattern, reason in ((r"FileNotFoundError|No such file", "no such socket"),
                            (r"ConnectionRefused|Connection refused", "connection refused: nothing listens there"),
                            (r"PermissionError|Permission denied", "permission denied: this user may not use it"),
                            (r"[Tt]imed? ?out", f"no answer within {PING_TIMEOUT_S} s")):
        if re.search(pattern, text):
            return reason
    return text.removeprefix("Error while fetching server API version: ")[:300]


@click.command("harness-bundle")
@click.option("--python", "pythons", multiple=True, metavar="X.Y",
              help="A CPython minor version to build for (3.11, 3.12 or 3.13); repeat it. Default: all of them.")
@click.option("--dest", default=None, type=click.Path(file_okay=False),
              help="Directory of bundles to build into: give it to agents with `agent run --harness-bundles DIR`. "
                   "Default: $STALWART_HARNESS_BUNDLES, else the local agent's (harness-bundles in "
                   "$STALWART_HOME/agent).")
def harness_bundle_command(pythons: tuple[str, ...], dest: str | None) -> None:
    """Build the harness for containers' Pythons ahead of time.

    An agent with a container runtime mounts Stalwart's harness and the packages it needs, built for the image's
    CPython minor version, read-only into each task's container. It builds a missing one when a task needs it:
    for its own Python from the files installed here, for another version with pip from the package index. On
    agents that reach no index, build the bundles on a machine that does, with the same Stalwart and package
    versions, and copy the directory to the agents (docs/containers.md)."""
    versions = []
    for text in pythons or [harness_bundle.version_text(v) for v in harness_bundle.SUPPORTED]:
        try:
            versions.append(harness_bundle.parse_version(text))
        except harness_bundle.BundleError as err:
            raise InvalidRequest(f"--python: {err}") from err
    root = pathlib.Path(dest) if dest else harness_bundle.cache_root(homes.home() / "agent")
    for version in versions:
        try:
            built = harness_bundle.bundle_dir(root, version)
        except harness_bundle.BundleError as err:
            raise InvalidStateError(str(err)) from err
        output.console.print(f"Python {harness_bundle.version_text(version)}: {built}")
