"""Servers started once per pytest run, shared by every xdist worker and stopped when the run ends.

The test plugins that start real servers (`container_servers`: dockerd, Podman, a registry; `storage_servers`: the
object-store emulators) share these mechanics through one `RunDirectory` each:

- the run's controller (the process without xdist's `workerinput`) makes a run directory in `pytest_configure`
  and names it in an environment variable that xdist's workers inherit (a pytest run inside a run finds it set and
  uses the outer run's servers);
- whoever needs a server first starts it under an `flock` on `<run dir>/lock` (`locked`) and records it there;
  every later caller, in any worker, reads that record;
- the controller's `pytest_unconfigure` calls the plugin's `stop_all(run_dir)`; a reaper process (`start_reaper`)
  calls it too if the controller dies without doing so: run as `python once_per_run.py reap MODULE RUN_DIR OWNER`,
  it waits for the owner's exit through a pidfd and then imports MODULE (a plugin beside this file) and calls its
  `stop_all`.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import pathlib
import select
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest


class RunDirectory:
    """One plugin's run directory: named in `env`, made under /tmp with `prefix` (short: unix socket paths live
    in it), its servers stopped by `<module>.stop_all(run_dir)`."""

    def __init__(self, env: str, prefix: str, module: str, purpose: str) -> None:
        self.env, self.prefix, self.module, self.purpose = env, prefix, module, purpose
        self._owned = pytest.StashKey[pathlib.Path]()

    def path(self) -> pathlib.Path:
        """This run's directory (set by the controller's `configure`)."""
        raw = os.environ.get(self.env)
        if not raw:
            raise RuntimeError(f"{self.env} is not set: {self.purpose} start only under pytest "
                               f"(tests/conftest.py loads {self.module} as a plugin)")
        return pathlib.Path(raw)

    def configure(self, config: pytest.Config) -> None:
        """`pytest_configure`: the controller makes the run directory; workers and nested runs inherit it."""
        if hasattr(config, "workerinput") or os.environ.get(self.env):
            return
        run_dir = pathlib.Path(tempfile.mkdtemp(prefix=self.prefix, dir="/tmp"))
        (run_dir / "owner").write_text(f"{os.getpid()}\n")
        os.environ[self.env] = str(run_dir)
        config.stash[self._owned] = run_dir

    def unconfigure(self, config: pytest.Config) -> None:
        """`pytest_unconfigure`: the controller stops what its run started."""
        run_dir = config.stash.get(self._owned, None)
        if run_dir is not None:
            _stop_all_of(self.module, run_dir)
            os.environ.pop(self.env, None)

    def start_reaper(self, run_dir: pathlib.Path) -> None:
        """A process that stops the run's servers if the controller dies without stopping them (once per run)."""
        marker = run_dir / "reaper"
        if marker.exists():
            return
        owner = (run_dir / "owner").read_text().strip()
        subprocess.Popen([sys.executable, __file__, "reap", self.module, str(run_dir), owner],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, cwd=os.path.dirname(__file__))
        marker.write_text("started\n")


@contextlib.contextmanager
def locked(run_dir: pathlib.Path) -> Iterator[None]:
    """The run directory's lock: one process at a time starts, reads or stops its servers."""
    with open(run_dir / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _stop_all_of(module: str, run_dir: pathlib.Path) -> None:
    importlib.import_module(module).stop_all(run_dir)


def _reap(module: str, run_dir: pathlib.Path, owner: int) -> None:
    try:
        pidfd = os.pidfd_open(owner)
    except ProcessLookupError:
        pass
    else:
        select.select([pidfd], [], [])  # readable once the owner has exited
    _stop_all_of(module, run_dir)


if __name__ == "__main__" and sys.argv[1:2] == ["reap"]:
    _reap(sys.argv[2], pathlib.Path(sys.argv[3]), int(sys.argv[4]))
