"""The container servers the tests talk to, each started under one run directory and stopped by its record.

`start_dockerd` runs Docker on its own unix socket, data and exec roots (no bridge, no iptables: machine-notes
§3, §12); `start_podman` runs Podman's Docker-compatible API service with its own containers.conf (runc,
lowered ulimits), storage, locks and registries.conf; `start_registry` runs Debian's `docker-registry` on a
loopback port with htpasswd basic auth. Each records the pids it started in `<run dir>/pids` as it goes, so
`stop_recorded` stops everything started, even a start that failed halfway: first every container of each
engine, then the daemons, then whatever the daemons left mounted under the run directory; the directory's
files are removed in the background (hundreds of MB of image layers take seconds).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

PIDS_NAME = "pids"
START_TIMEOUT = 60.0  # seconds a daemon gets to answer its API


@dataclass(frozen=True)
class Registry:
    """A registry on loopback with basic auth: `host` is `127.0.0.1:PORT` (an image is `host/name:tag`)."""

    host: str
    username: str
    password: str = field(repr=False)  # a secret: never in a test's output

    @property
    def auth(self) -> dict[str, str]:
        """The credentials as Docker's auth config (what `registry_auth` holds)."""
        return {"username": self.username, "password": self.password, "serveraddress": self.host}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _record(run_dir: pathlib.Path, name: str, pid: int) -> None:
    with open(run_dir / PIDS_NAME, "a") as f:
        f.write(json.dumps({"name": name, "pid": pid}) + "\n")


def _spawn(run_dir: pathlib.Path, name: str, argv: list[str],
           env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start a daemon in its own session (no test's signal reaches it), its output in `<name>.log`; record it."""
    with open(run_dir / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)
    _record(run_dir, name, proc.pid)
    return proc


def _wait_until(proc: subprocess.Popen[bytes], run_dir: pathlib.Path, name: str, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        log = (run_dir / f"{name}.log").read_text(errors="replace")[-3000:]
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode} while starting; its log ends:\n{log}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not answer within {START_TIMEOUT:.0f} s; its log ends:\n{log}")
        time.sleep(0.1)


def _engine_answers(url: str) -> Callable[[], bool]:
    def ready() -> bool:
        import docker

        try:
            return bool(docker.APIClient(base_url=url, version="1.41", timeout=5).ping())
        except Exception:  # not listening yet: any connection error
            return False
    return ready


def start_dockerd(run_dir: pathlib.Path) -> str:
    """dockerd with everything of its own under `<run dir>/docker`; its engine URL once the API answers."""
    root = run_dir / "docker"
    root.mkdir()
    (root / "daemon.json").write_text("{}")  # not the machine's /etc/docker/daemon.json
    url = f"unix://{root / 'docker.sock'}"
    proc = _spawn(run_dir, "dockerd", [
        "dockerd", "--config-file", str(root / "daemon.json"), "--data-root", str(root / "data"),
        "--exec-root", str(root / "exec"), "--pidfile", str(root / "dockerd.pid"), "-H", url,
        "--iptables=false", "--ip6tables=false", "--bridge=none", "--insecure-registry", "127.0.0.0/8",
        "--log-level", "warn"])
    _wait_until(proc, run_dir, "dockerd", _engine_answers(url))
    containerd_pid = root / "exec" / "containerd" / "containerd.pid"  # the containerd dockerd started
    if containerd_pid.exists():
        _record(run_dir, "containerd", int(containerd_pid.read_text().strip()))
    return url


def _podman_init_path() -> str:
    found = [p for p in ("/usr/libexec/podman/catatonit", "/usr/bin/catatonit", "/usr/bin/tini-static")
             if os.path.exists(p)]
    return found[0] if found else "/usr/libexec/podman/catatonit"


def podman_env(run_dir: pathlib.Path, registry_host: str) -> dict[str, str]:
    """The environment that points podman at the run's own configuration (also for a `podman` CLI call)."""
    root = run_dir / "podman"
    conf = {
        "containers.conf": (
            '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n'
            f'init_path = "{_podman_init_path()}"\n'
            f'[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
            f'events_logfile_path = "{root}/events.log"\ntmp_dir = "{root}/tmp"\nlock_type = "file"\n'
            f'[network]\nnetwork_config_dir = "{root}/networks"\n'),
        "storage.conf": f'[storage]\ndriver = "overlay"\ngraphroot = "{root}/storage"\nrunroot = "{root}/run"\n',
        "registries.conf": (f'unqualified-search-registries = []\n[[registry]]\nlocation = "{registry_host}"\n'
                            'insecure = true\n'),
    }
    if not root.exists():
        root.mkdir()
        for name, text in conf.items():
            (root / name).write_text(text)
    return {**os.environ, "CONTAINERS_CONF": str(root / "containers.conf"),
            "CONTAINERS_STORAGE_CONF": str(root / "storage.conf"),
            "CONTAINERS_REGISTRIES_CONF": str(root / "registries.conf")}


def start_podman(run_dir: pathlib.Path, registry_host: str) -> str:
    """Podman's Docker-compatible API service on `<run dir>/podman/podman.sock`; its URL once it answers."""
    env = podman_env(run_dir, registry_host)
    url = f"unix://{run_dir / 'podman' / 'podman.sock'}"
    proc = _spawn(run_dir, "podman", ["podman", "system", "service", "--time=0", url], env)
    _wait_until(proc, run_dir, "podman", _engine_answers(url))
    return url


def start_registry(run_dir: pathlib.Path, port: int) -> Registry:
    """Debian's docker-registry on 127.0.0.1:`port` with basic auth, a user and password made for this run."""
    root = run_dir / "registry"
    root.mkdir()
    user, password = f"tester-{secrets.token_hex(3)}", secrets.token_urlsafe(18)
    htpasswd = subprocess.run(["htpasswd", "-Bbn", user, password], capture_output=True, text=True, check=True)
    (root / "htpasswd").write_text(htpasswd.stdout)
    (root / "config.yml").write_text(
        f"version: 0.1\nlog: {{level: warn}}\nstorage: {{filesystem: {{rootdirectory: {root / 'data'}}}}}\n"
        f"http: {{addr: '127.0.0.1:{port}', secret: {secrets.token_hex(16)}}}\n"
        f"auth: {{htpasswd: {{realm: stalwart-tests, path: {root / 'htpasswd'}}}}}\n")
    proc = _spawn(run_dir, "registry", ["docker-registry", "serve", str(root / "config.yml")])

    def ready() -> bool:  # /v2/ asks for credentials once it listens
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2)
        except urllib.error.HTTPError as err:
            return err.code == 401
        except OSError:
            return False
        return False

    _wait_until(proc, run_dir, "registry", ready)
    return Registry(f"127.0.0.1:{port}", user, password)


def _remove_all_containers(url: str) -> None:
    import docker

    with contextlib.suppress(Exception):  # an engine that is already gone has nothing left
        api = docker.APIClient(base_url=url, version="1.41", timeout=30)
        for c in api.containers(all=True):
            with contextlib.suppress(Exception):
                api.remove_container(c["Id"], force=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie (our own child, not yet reaped) counts as gone
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def _stop(pids: list[int], timeout: float = 15.0) -> None:
    """SIGTERM to all at once, then SIGKILL to whatever still runs after `timeout`."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _unmount_under(root: pathlib.Path) -> None:
    """Unmount whatever the engines left mounted under `root`, deepest first."""
    points = []
    with contextlib.suppress(OSError):
        for line in pathlib.Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if point == str(root) or point.startswith(f"{root}/"):
                points.append(point)
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def stop_recorded(run_dir: pathlib.Path, engine_urls: list[str]) -> None:
    """Stop every container of the engines, then every daemon recorded in the run directory; remove it."""
    for url in engine_urls:
        _remove_all_containers(url)
    records = []
    with contextlib.suppress(OSError):
        records = [json.loads(line) for line in (run_dir / PIDS_NAME).read_text().splitlines() if line]
    daemons = [int(rec["pid"]) for rec in records if rec["name"] != "containerd"]
    _stop(daemons)  # dockerd stops the containerd it started; what it left running goes next
    _stop([int(rec["pid"]) for rec in records if rec["name"] == "containerd"])
    _unmount_under(run_dir)
    trash = run_dir.with_name(f"{run_dir.name}.removing")
    os.rename(run_dir, trash)  # gone at once for whoever looks; its files go in the background (seconds)
    subprocess.Popen(["rm", "-rf", "--one-file-system", str(trash)], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
