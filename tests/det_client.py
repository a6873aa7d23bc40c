"""The real `determined==0.38.1` client (its `det` CLI and Python SDK), in a virtual environment of its own.

It cannot share the test venv: the package is named `determined`, as Stalwart's compat layer is inside trials, and
it pins its own dependencies (`requests<2.32`). `venv()` makes the environment once per machine, under a lock so
that xdist's workers wait for the first one, in `~/.cache/stalwart-tests/determined-0.38.1` (from PyPI, as the
test venv's packages are); `det(...)` runs the CLI against a master with a config directory of the test's own, so
no test sees another's saved tokens.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import shutil
import subprocess
import sys

VERSION = "0.38.1"
CACHE = pathlib.Path(os.environ.get("STALWART_TEST_CACHE", pathlib.Path.home() / ".cache" / "stalwart-tests"))
VENV = CACHE / f"determined-{VERSION}"


def venv() -> pathlib.Path:
    """The environment's directory, made on first use (a minute or two: pip from the package index)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    done = VENV / "installed"
    with open(CACHE / f"determined-{VERSION}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists():
                shutil.rmtree(VENV, ignore_errors=True)
                subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True)
                for _try in range(2):  # a second try covers a flaky package index
                    res = subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", f"determined=={VERSION}"],
                                         capture_output=True, text=True, timeout=900)
                    if res.returncode == 0:
                        break
                if res.returncode != 0:
                    raise RuntimeError(f"could not install determined=={VERSION}: {res.stderr[-3000:]}")
                done.write_text(VERSION + "\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return VENV


def python() -> str:
    """The environment's interpreter, for SDK scripts (`import determined` is the real package there)."""
    return str(venv() / "bin" / "python")


def env(master_url: str, config_dir: pathlib.Path, **extra: str) -> dict[str, str]:
    """An environment for the real client: DET_MASTER set, its token store in `config_dir`, no Stalwart or DET_
    variables of the test process (no PYTHONPATH either: `determined` must be the real one)."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("DET_", "STALWART_", "PYTHON")) and k not in ("VIRTUAL_ENV",)}
    return {**keep, "DET_MASTER": master_url, "DET_DEBUG_CONFIG_PATH": str(config_dir), **extra}


def det(master_url: str, config_dir: pathlib.Path, *args: str, stdin: str = "", timeout: float = 120,
        **extra_env: str) -> subprocess.CompletedProcess[str]:
    """Run `det ARGS...` against `master_url` and return what it did (never raises on its exit status); it runs in
    `config_dir`, so what it writes by default (a model definition's .tgz) lands there."""
    config_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.run([str(venv() / "bin" / "det"), *args], env=env(master_url, config_dir, **extra_env),
                          input=stdin, capture_output=True, text=True, timeout=timeout, cwd=config_dir)


if __name__ == "__main__":  # `.ci/run` makes the environment before the tests, so no test waits for pip
    print(f"Determined's client {VERSION}: {venv()}")
