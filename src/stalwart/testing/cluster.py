"""LocalTestCluster: real master and agent processes on loopback, with controls to kill and restart them."""

from __future__ import annotations

import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TypedDict, TypeVar, Unpack

from stalwart.agent import credential
from stalwart.api.errors import StalwartError
from stalwart.client import Client
from stalwart.client.auth_file import AuthFile

T = TypeVar("T")


class ClientOptions(TypedDict, total=False):
    """Client()'s keyword arguments."""

    cluster_token: str | None
    allocation_token: str | None
    session_token: str | None
    retry_for: float
    timeout: float


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rendezvous_port() -> int:
    """A free port below the kernel's ephemeral range (32768 up), for a port another process binds later.

    A `free_port()` comes from that range, where any process's outgoing connection may take it before
    torch's store binds it; the store's chief then fails and its peers wait for it until they time out.
    The master picks rendezvous ports below that range for the same reason (29500..30499).
    """
    rng = random.SystemRandom()
    while True:
        port = rng.randrange(20000, 29000)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


class LocalTestCluster:
    """One master (SQLite file or a PostgreSQL URL) and `agents` agents, each a real process."""

    def __init__(self, home: pathlib.Path, db_url: str | None = None, *, slots: int = 1, agents: int = 1,
                 agent_timeout: float = 30.0, master_config: str | None = None,
                 agent_pools: list[str] | None = None, runtime: str = "process", engine_url: str | None = None,
                 determined_api: bool = False) -> None:
        self.home = pathlib.Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        self.db_url = db_url or f"sqlite:///{self.home / 'master.db'}"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # Determined's CLI and SDK, on a port of their own (master/determined_api): DET_MASTER for `det`
        self.det_port = free_port() if determined_api else None
        self.det_url = f"http://127.0.0.1:{self.det_port}" if self.det_port else None
        self.slots = slots
        self.n_agents = agents
        self.agent_timeout = agent_timeout
        self.master_config = master_config  # YAML text of a master config file, or None
        self.agent_pools = agent_pools or []
        self.runtime, self.engine_url = runtime, engine_url  # the agents' (start_agent may give others)
        self.master: subprocess.Popen[bytes] | None = None
        self.agents: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "STALWART_HOME": str(self.home), "STALWART_MASTER": self.url}
        self.env.pop("DET_MASTER", None)
        for key in ("DET_USER", "DET_PASS", "DET_USER_TOKEN", "STALWART_USER", "STALWART_PASSWORD",
                    "STALWART_USER_TOKEN"):
            self.env.pop(key, None)
        self.admin_token: str | None = None  # the bootstrap admin's session, logged in at start

    # -- processes ------------------------------------------------------------------------
    def _spawn(self, args: list[str], log: str) -> subprocess.Popen[bytes]:
        with open(self.home / log, "ab") as out:  # the child keeps its own copy of the descriptor
            return subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", *args], env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def start_master(self) -> None:
        args = ["master", "run", "--db", self.db_url, "--port", str(self.port), "--home", str(self.home),
                "--agent-timeout", str(self.agent_timeout)]
        if self.det_port is not None:
            args += ["--determined-port", str(self.det_port)]
        if self.master_config is not None:
            (self.home / "master.yaml").write_text(self.master_config)
            args += ["--config", str(self.home / "master.yaml")]
        self.master = self._spawn(args, "master.log")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with Client(self.url, timeout=1) as probe:
                    probe.master_info()
                self._log_in_admin()
                return
            except StalwartError:
                pass
            if self.master.poll() is not None:
                raise RuntimeError(f"master exited with {self.master.returncode}: {self.log('master.log')[-3000:]}")
            time.sleep(0.1)
        raise RuntimeError("master did not come up within 60 s")

    def _log_in_admin(self) -> None:
        """Log in as the bootstrap admin (empty password: the master listens on loopback) and keep the session in
        this cluster's auth file, as `stalwart up` does: the CLI run by `cli()` and `client()` use it."""
        if self.admin_token is None:
            with Client(self.url, timeout=30) as c:
                self.admin_token = c.login("admin", "").token
        AuthFile(self.home / "auth.json").store(self.url, "admin", self.admin_token)

    def start_agent(self, index: int = 0, slots: int | None = None, pool: str | None = None,
                    runtime: str | None = None, engine_url: str | None = None) -> subprocess.Popen[bytes]:
        """Start agent `index` (`agent-{index}`), running tasks with `runtime` (process, docker or podman; default:
        the cluster's) on the container engine at `engine_url` (default: the cluster's, else the runtime's own)."""
        pool = pool or (self.agent_pools[index] if index < len(self.agent_pools) else "default")
        args = ["agent", "run", "--master", self.url, "--agent-id", f"agent-{index}",
                "--slots", str(self.slots if slots is None else slots),
                "--work-dir", str(self.home / f"agent-{index}"), "--resource-pool", pool,
                "--runtime", runtime or self.runtime]
        engine_url = engine_url or self.engine_url
        if engine_url:
            args += ["--engine-url", engine_url]
        proc = self._spawn(args, f"agent-{index}.log")
        if index < len(self.agents):
            self.agents[index] = proc
        else:
            self.agents.append(proc)
        return proc

    def kill_agent(self, index: int) -> None:
        """SIGKILL an agent (its trial processes keep running until the master declares it lost)."""
        proc = self.agents[index]
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()

    def start(self) -> LocalTestCluster:
        self.start_master()
        for i in range(self.n_agents):
            self.start_agent(i)
        return self

    def kill_master(self) -> None:
        """SIGKILL, as a crash would."""
        if self.master and self.master.poll() is None:
            os.kill(self.master.pid, signal.SIGKILL)
            self.master.wait()

    def stop(self) -> None:
        for proc in [*self.agents, self.master]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in [*self.agents, self.master]:
            if proc is None:
                continue
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def __enter__(self) -> LocalTestCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers --------------------------------------------------------------------------
    def log(self, name: str) -> str:
        path = self.home / name
        return path.read_text(errors="replace") if path.exists() else ""

    def client(self, **kw: Unpack[ClientOptions]) -> Client:
        """A client of this master carrying the admin's session (pass session_token=None for an anonymous one)."""
        kw.setdefault("session_token", self.admin_token)
        return Client(self.url, **kw)

    def cli(self, *args: str, timeout: float = 300, check: bool = False) -> subprocess.CompletedProcess[str]:
        res = subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=self.env, capture_output=True,
                             text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"stalwart {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res

    def wait_for(self, predicate: Callable[[], T | None], timeout: float = 120, interval: float = 0.2,
                 what: str = "condition") -> T:
        """The first truthy value `predicate()` returns (an exception counts as a falsy one), polled."""
        deadline = time.monotonic() + timeout
        last: T | Exception | None = None
        while time.monotonic() < deadline:
            try:
                last = predicate()
            except Exception as err:  # noqa: BLE001 - master may be restarting
                last = err
            else:
                if last:
                    return last
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; last value: {last!r}")

    def cluster_token(self) -> str:
        """The master's cluster token: it only enrolls new agents (docs/users.md)."""
        return (self.home / "cluster-token").read_text().strip()

    def agent_credential(self, index: int = 0, timeout: float = 60) -> str:
        """The own credential agent `index` was given when it enrolled (kept in its work directory)."""
        agent_id = f"agent-{index}"
        stored = self.wait_for(lambda: credential.load(self.home / agent_id, agent_id), timeout=timeout,
                               what=f"{agent_id} to enroll")
        return str(stored.credential)
