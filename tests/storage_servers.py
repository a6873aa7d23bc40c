"""Object-store emulators for the storage tests, each started lazily, once per pytest run (xdist workers included).

They are emulators of the cloud APIs, not the clouds: moto's server mode for S3, `gcp-storage-emulator` for GCS and
Azurite's blob service (npm, locked in tests/azurite) for Azure. Each listens on 127.0.0.1 only and keeps its data in
memory.

The run directory (named in `STALWART_TEST_STORAGE`), its lock and the reaper that cleans up after a dead controller
are `once_per_run`'s (`RUN`). The first test that needs an emulator calls `emulator(name)`: under the run's lock it
starts that one, makes the bucket `BUCKET` in it and records it in `<run dir>/<name>.json`; every later call, in any
worker, reads that record. At the run's end `stop_all` stops what was recorded and removes the run directory.

Fixture (session scope): `storage_emulator`, a function of the name ('s3', 'gcs', 'azure'). It skips, saying what
to install, only where this machine lacks the emulator.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import pytest

from once_per_run import RunDirectory, locked
from stalwart.testing import free_port

RUN = RunDirectory("STALWART_TEST_STORAGE", "stalwart-st-", "storage_servers", "the storage emulators")
BUCKET = "stalwart-tests"
AZURITE = pathlib.Path(__file__).with_name("azurite")
# Azurite's well-known development account: public, documented, accepted by Azurite alone.
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
S3_KEY, S3_SECRET = "stalwart-test-key", "stalwart-test-secret-value"  # moto accepts any


@dataclass(frozen=True)
class Emulator:
    """One running emulator: its name ('s3', 'gcs', 'azure'), process, endpoint and the bucket made in it."""

    name: str
    pid: int
    endpoint: str  # http://127.0.0.1:PORT
    bucket: str = BUCKET

    @property
    def azure_connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
                f"BlobEndpoint={self.endpoint}/{AZURITE_ACCOUNT};")

    def checkpoint_storage(self, prefix: str) -> dict[str, Any]:
        """A `checkpoint_storage` section (Determined's keys) for this emulator's bucket, under `prefix` where the
        backend has one. GCS finds the emulator through STORAGE_EMULATOR_HOST (`environment()`)."""
        if self.name == "s3":
            return {"type": "s3", "bucket": self.bucket, "prefix": prefix, "endpoint_url": self.endpoint,
                    "access_key": S3_KEY, "secret_key": S3_SECRET}
        if self.name == "gcs":
            return {"type": "gcs", "bucket": self.bucket, "prefix": prefix}
        return {"type": "azure", "container": self.bucket, "connection_string": self.azure_connection_string}

    def environment(self) -> dict[str, str]:
        """What a process using this emulator needs in its environment."""
        return {"STORAGE_EMULATOR_HOST": self.endpoint} if self.name == "gcs" else {}


def _bin(name: str) -> str | None:
    """A console script of this venv (next to its python), else one on PATH."""
    local = pathlib.Path(sys.executable).with_name(name)
    return str(local) if local.exists() else shutil.which(name)


def _moto(port: int) -> list[str]:
    return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]


def _gcs(port: int) -> list[str]:
    return [str(_bin("gcp-storage-emulator")), "start", "-H", "127.0.0.1", "--port", str(port), "--in-memory",
            "--default-bucket", BUCKET, "--quiet"]


def _azurite(port: int) -> list[str]:
    if not (AZURITE / "node_modules" / ".bin" / "azurite-blob").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=AZURITE, check=True, timeout=300,
                       stdout=subprocess.DEVNULL)
    return [str(AZURITE / "node_modules" / ".bin" / "azurite-blob"), "--blobHost", "127.0.0.1", "--blobPort",
            str(port), "--inMemoryPersistence", "--skipApiVersionCheck", "--loose", "--disableTelemetry"]


COMMANDS: dict[str, Callable[[int], list[str]]] = {"s3": _moto, "gcs": _gcs, "azure": _azurite}


def missing(name: str) -> str | None:
    """Why this machine cannot run the `name` emulator (what to install), or None."""
    if name == "s3" and (importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None):
        return "the S3 tests need moto's server mode: pip install -c requirements.lock 'moto[server]'"
    if name == "gcs" and _bin("gcp-storage-emulator") is None:
        return "the GCS tests need the GCS emulator: pip install -c requirements.lock gcp-storage-emulator"
    if name == "azure" and (shutil.which("node") is None or shutil.which("npm") is None):
        return "the Azure tests need Azurite, on Node.js: apt-get install nodejs npm (then npm ci in tests/azurite)"
    library = {"s3": "s3fs", "gcs": "gcsfs", "azure": "adlfs"}[name]
    if importlib.util.find_spec(library) is None:
        return f"the {name} backend needs {library}: pip install -c requirements.lock -e '.[cloud]'"
    return None


def emulator(name: str) -> Emulator:
    """The `name` emulator of this run, started now by whoever asks first (once per run, across xdist workers)."""
    run_dir = RUN.path()
    with locked(run_dir):
        state, failed = run_dir / f"{name}.json", run_dir / f"{name}.failed"
        if state.exists():
            return Emulator(**json.loads(state.read_text()))
        if failed.exists():
            raise RuntimeError(f"the {name} emulator failed to start earlier in this run: {failed.read_text()}")
        RUN.start_reaper(run_dir)
        try:
            started = _start(run_dir, name)
        except BaseException as err:
            failed.write_text(f"{type(err).__name__}: {err}")
            raise
        state.write_text(json.dumps(asdict(started)))
        return started


def _start(run_dir: pathlib.Path, name: str) -> Emulator:
    port = free_port()
    with open(run_dir / f"{name}.log", "ab") as log:  # the emulator's own copy stays open
        proc = subprocess.Popen(COMMANDS[name](port), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                cwd=run_dir, start_new_session=True)
    started = Emulator(name, proc.pid, f"http://127.0.0.1:{port}")
    (run_dir / f"{name}.pid").write_text(f"{proc.pid}\n")  # stopped at the run's end even if it never answers
    _wait_until_answering(proc, started, run_dir / f"{name}.log")
    _make_bucket(started)
    return started


def _wait_until_answering(proc: subprocess.Popen[bytes], started: Emulator, log: pathlib.Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the {started.name} emulator exited with {proc.returncode}: "
                               f"{log.read_text(errors='replace')[-2000:]}")
        try:
            urllib.request.urlopen(started.endpoint + "/", timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # an answer, even 400 (Azurite's to a bare GET): it is up
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the {started.name} emulator did not answer at {started.endpoint} within 60 s")


def _make_bucket(started: Emulator) -> None:
    """The run's bucket (the GCS emulator makes its own, `--default-bucket`)."""
    if started.name == "s3":
        import s3fs

        s3fs.S3FileSystem(key=S3_KEY, secret=S3_SECRET, endpoint_url=started.endpoint,
                          skip_instance_cache=True).mkdir(started.bucket)
    elif started.name == "azure":
        import adlfs

        adlfs.AzureBlobFileSystem(connection_string=started.azure_connection_string,
                                  skip_instance_cache=True).mkdir(started.bucket)


def stop_all(run_dir: pathlib.Path) -> None:
    """Stop every emulator of the run (each by its recorded process group) and remove its directory."""
    if not run_dir.exists():
        return
    with locked(run_dir):
        for pid_file in run_dir.glob("*.pid"):
            _stop(int(pid_file.read_text()))
    shutil.rmtree(run_dir, ignore_errors=True)


def _stop(pid: int) -> None:
    """SIGTERM to the emulator's own process group (it was started in a new session), SIGKILL after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.05)


# -- the pytest plugin -----------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    RUN.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    RUN.unconfigure(config)


@pytest.fixture(scope="session")
def storage_emulator() -> Callable[[str], Emulator]:
    """`storage_emulator(name)`: this run's emulator for 's3', 'gcs' or 'azure' (skips where it is missing)."""

    def get(name: str) -> Emulator:
        if reason := missing(name):
            pytest.skip(reason)
        return emulator(name)

    return get

