"""One Stalwart cluster with the Determined listener, started once per pytest run for the tests of Determined's own
CLI and SDK against it (tests/integration/determined_api/), and stopped at the run's end.

The run directory (named in `STALWART_TEST_DET`), its lock and the reaper are `once_per_run`'s (`RUN`). The first
test that needs the cluster calls `cluster()`: under the run's lock it starts a `LocalTestCluster` (a master with
`--determined-port`, one agent with `SLOTS` slots) in the run directory and records it in `<run dir>/cluster.json`;
every later call, in any xdist worker, reads that record. Tests make their own users and experiments on it, and
give the real `det` a config directory of their own (`DetMaster.det`), so none sees another's tokens.

Fixture (session scope): `det_master`.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

import det_client
from once_per_run import RunDirectory, locked
from stalwart.client import Client
from stalwart.testing.cluster import LocalTestCluster

RUN = RunDirectory("STALWART_TEST_DET", "stalwart-det-", "det_cluster", "the Determined-listener test cluster")
SLOTS = 2


@dataclass(frozen=True)
class DetMaster:
    """This run's cluster: its two addresses, its home (the `stalwart` CLI's auth file) and the admin's session."""

    home: pathlib.Path
    url: str
    det_url: str
    admin_token: str

    def client(self, token: str | None = None) -> Client:
        """Stalwart's own client, as the admin (or as the holder of `token`)."""
        return Client(self.url, session_token=token or self.admin_token)

    def cli(self, *args: str, timeout: float = 300, **extra_env: str) -> subprocess.CompletedProcess[str]:
        """`stalwart ARGS...` as the admin (or as the user `STALWART_USER`/`STALWART_PASSWORD` in `extra_env` name)."""
        env = {**os.environ, "STALWART_HOME": str(self.home), "STALWART_MASTER": self.url}
        for key in ("DET_MASTER", "DET_USER", "DET_PASS", "STALWART_USER", "STALWART_PASSWORD"):
            env.pop(key, None)
        return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env={**env, **extra_env},
                              capture_output=True, text=True, timeout=timeout)

    def det(self, config_dir: pathlib.Path, *args: str, stdin: str = "", timeout: float = 300,
            **env: str) -> subprocess.CompletedProcess[str]:
        """The real `det ARGS...` against the Determined listener, its tokens kept in `config_dir`."""
        return det_client.det(self.det_url, config_dir, *args, stdin=stdin, timeout=timeout, **env)

    def make_user(self, username: str, password: str) -> None:
        """A user with a password and no role: a test grants what it needs."""
        with self.client() as c:
            c.create_user(username, password=password)


def cluster() -> DetMaster:
    """This run's cluster, started now by whoever asks first (once per run, across xdist workers)."""
    run_dir = RUN.path()
    with locked(run_dir):
        state = run_dir / "cluster.json"
        if state.exists():
            raw = json.loads(state.read_text())
            return DetMaster(pathlib.Path(raw["home"]), raw["url"], raw["det_url"], raw["admin_token"])
        RUN.start_reaper(run_dir)
        started = LocalTestCluster(run_dir / "home", slots=SLOTS, determined_api=True).start()
        assert started.det_url is not None and started.admin_token is not None
        pids = [p.pid for p in (*started.agents, started.master) if p is not None]
        (run_dir / "pids").write_text("".join(f"{pid}\n" for pid in pids))
        master = DetMaster(started.home, started.url, started.det_url, started.admin_token)
        state.write_text(json.dumps({"home": str(master.home), "url": master.url, "det_url": master.det_url,
                                     "admin_token": master.admin_token}))
        return master


def stop_all(run_dir: pathlib.Path) -> None:
    """Stop the cluster's agent and master (each leads a process group of its own) and remove the run directory."""
    if not run_dir.exists():
        return
    with locked(run_dir):
        pids_file = run_dir / "pids"
        pids = [int(line) for line in pids_file.read_text().split()] if pids_file.exists() else []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.1)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(run_dir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie of a worker that has not reaped it yet counts as gone
        return "zombie" not in pathlib.Path(f"/proc/{pid}/status").read_text()
    return False


def pytest_configure(config: pytest.Config) -> None:
    RUN.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    RUN.unconfigure(config)


@pytest.fixture(scope="session")
def det_master() -> DetMaster:
    return cluster()
