"""The launcher interface: start one allocation's entrypoint on this machine, stream its output, signal, kill, wait.

A launcher is how an agent runs what the master asks: the `process` launcher (`launchers/process.py`) starts
an OS process; container launchers (Docker, Podman: next) start a container. The agent prepares the
allocation's directories and its environment itself (`agent/process.py`), then describes the run in a
`LaunchSpec` and hands it to its launcher, which answers with a `Launched` handle. Every launcher passes the
same conformance suite (tests/unit/agent/test_launcher_conformance.py), so the agent behaves the same on each.

The contract, per spec field:

* `argv`, `cwd`, `env`: the entrypoint, where it starts and its whole environment. Nothing of the agent's
  own environment reaches it beyond `env` (a container engine may add its own few variables, such as
  `HOSTNAME`; a fenced process gets `STALWART_FENCE_FD`, see `fence`).
* `user`: the uid and gid to run as, with no supplementary groups; None runs as the agent's own user.
* `mounts`: host paths seen at container paths. A process sees the host's file system as it is, so for the
  process launcher mounts are a no-op: the agent mounts its directories at their own host paths, so the
  paths in `cwd` and `env` mean the same under every launcher.
* `shm_size`: the size of `/dev/shm` in bytes (containers; a process shares the host's).
* `image`: the image to run in; None for a process. A launcher that cannot honour a spec (the process
  launcher given an image) raises `LaunchError`.
* `container`: what only a container honours (`ContainerOptions`: devices, GPUs, capabilities, network mode,
  ports, whether it may run as root); None for a process, and ignored by the process launcher.
* `fence`: the run must not outlive this agent, however the agent dies. The process launcher holds the
  write end of a pipe whose read end the entrypoint's watchdog watches (`harness/fence.py`; the harness's
  launcher starts it); a container launcher runs a watchdog of its own on the host.

And per handle: `output(stream)` yields the stream's bytes in chunks as they arrive, in order, stdout and
stderr apart, until the run has ended and all was read; `signal(sig)` sends a signal to the entrypoint (a
container's main process), which handles it or dies of it; `kill()` kills everything of the run at once (the
process group; the container), children included; `wait()` blocks until the run has ended, makes sure
nothing of it is left, releases its fence and record and returns its exit code: the entrypoint's exit status,
or `-N` when signal N killed it (as `subprocess` and Determined report it: -9 for a kill). A container
engine's `128 + N` is translated to `-N`.

Before a run starts, the agent asks its launcher for the image (`prepare_image`: pulled when missing or when
the config forces a pull, with the registry's credentials, its progress reported line by line) and for how to
start Stalwart's harness in it (`harness`: the interpreter, and for a container the read-only mount of the
harness built for the image's Python). Both raise `ImageError`, with the registry's or the image's own words,
when the image cannot be had or cannot run the harness: not a failure of the user's code.

A launcher also keeps a record of what it started, per agent: `list_started()` names the runs that still
run, and `remove_survivors()`, called by a restarted agent before it registers, kills what a previous agent
on the same work directory left running (process records; containers labelled with the allocation and agent).
"""

from __future__ import annotations

import abc
import pathlib
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

Stream = Literal["stdout", "stderr"]


class LaunchError(Exception):
    """The launcher cannot start this spec (the reason says why and what to do)."""


class ImageError(LaunchError):
    """The image cannot be had (a failed pull: the registry's message) or cannot run Stalwart's harness (its
    Python is not one Stalwart supports). Ends the allocation without counting as a failure of the user's code."""


@dataclass(frozen=True)
class RunAs:
    """The OS user and group a run has (no supplementary groups)."""

    uid: int
    gid: int


@dataclass(frozen=True)
class Mount:
    """A host path seen at `container_path` inside a container (a no-op for processes)."""

    host_path: str
    container_path: str
    read_only: bool = True


@dataclass(frozen=True)
class Device:
    """A host device node seen at `container_path` inside a container, with cgroup permissions (`rwm`)."""

    host_path: str
    container_path: str
    permissions: str = "rwm"


@dataclass(frozen=True)
class ContainerOptions:
    """What only a container launcher honours (Determined's `environment`, `resources` and the master's
    `task_container_defaults`, merged by the master)."""

    gpus: tuple[int, ...] = ()  # the allocation's GPU slots: the host's device ids the container gets
    devices: tuple[Device, ...] = ()
    add_capabilities: tuple[str, ...] = ()
    drop_capabilities: tuple[str, ...] = ()
    network_mode: str = "host"  # host by default: a DDP rendezvous across agents works as for processes
    ports: Mapping[str, int] = field(default_factory=dict)  # published when the network is not the host's
    allow_root: bool = False  # may run as uid 0 (the pool allows root tasks); else never as root


@dataclass(frozen=True)
class ImageSource:
    """Where an image comes from: whether to pull it even when it is present, and the registry's credentials
    (Docker's auth config keys: username, password, auth, serveraddress, identitytoken, registrytoken)."""

    image: str
    force_pull: bool = False
    registry_auth: Mapping[str, str] | None = field(default=None, repr=False)  # a secret: never logged


@dataclass(frozen=True)
class Harness:
    """How to start Stalwart's harness under a launcher: the interpreter's argv before `-m <module>`, what to
    add to the environment (PYTHONPATH) and what to mount (the harness built for the image's Python)."""

    python: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()


@dataclass(frozen=True)
class LaunchSpec:
    """One allocation's run, as the agent asks its launcher for it (see the module's docstring, field by field)."""

    allocation_id: str
    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict)
    user: RunAs | None = None
    mounts: tuple[Mount, ...] = ()
    shm_size: int | None = None
    image: str | None = None
    fence: bool = True
    container: ContainerOptions | None = None


@dataclass(frozen=True)
class Started:
    """A run that a launcher started and that still runs: its allocation and the launcher's id for it."""

    allocation_id: str
    id: str


class Launched(abc.ABC):
    """A started run: `id` names it in the launcher's records (a process group, a container), `pid` is its
    entrypoint's process id on this host (reported to the master)."""

    id: str
    pid: int

    @abc.abstractmethod
    def output(self, stream: Stream) -> Iterator[bytes]:
        """The stream's bytes in chunks as they arrive, until the run has ended; iterate each stream once."""

    @abc.abstractmethod
    def signal(self, sig: int) -> None:
        """Send `sig` to the entrypoint; nothing once the run has ended."""

    @abc.abstractmethod
    def kill(self) -> None:
        """Kill the whole run at once, children included; nothing once it has ended."""

    @abc.abstractmethod
    def wait(self) -> int:
        """Block until the run has ended and nothing of it is left; its exit code (-N: killed by signal N)."""


class Launcher(abc.ABC):
    """Starts runs for the agent `agent_id` whose work directory is `work_root`, and keeps their record."""

    name: ClassVar[str]
    runs_images: ClassVar[bool] = False  # a container launcher: its runs are in the order's image

    def __init__(self, work_root: pathlib.Path, agent_id: str, engine_url: str | None = None) -> None:
        self.work_root = pathlib.Path(work_root)
        self.agent_id = agent_id
        self.engine_url = engine_url  # a container engine's address (None: its default); the process launcher's: None

    @abc.abstractmethod
    def start(self, spec: LaunchSpec) -> Launched:
        """Start the run (LaunchError when this launcher cannot run the spec; OSError when the system refuses)."""

    def prepare_image(self, source: ImageSource, report: Callable[[str], object]) -> None:
        """Make `source.image` present (pull it when missing, or always with `force_pull`), calling `report` with
        each line of the pull's progress; ImageError when it cannot. Processes run in no image: nothing to do."""
        return None

    def harness(self, image: str | None) -> Harness:
        """How to start the harness in `image` (None: a process on this machine); ImageError when it cannot run
        there. A process runs it with the agent's own interpreter."""
        return Harness((sys.executable,))

    @abc.abstractmethod
    def list_started(self) -> list[Started]:
        """The runs this agent started that still run (not those that ended)."""

    @abc.abstractmethod
    def remove_survivors(self, timeout: float = 10.0) -> list[str]:
        """Kill what a previous agent on this work directory started and left running; the allocations killed."""
