"""The zero-setup local cluster: start master + one agent as background processes, find them, stop them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx

from stalwart.api.errors import MasterUnavailable, StalwartError
from stalwart.cli import home as homes

DEFAULT_PORT = 8080


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def pick_port(preferred: int = DEFAULT_PORT) -> int:
    if port_free(preferred):
        return preferred
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def master_alive(url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(url + "/api/v1/master", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_local() -> dict | None:
    """The record of a local cluster whose master answers, else None."""
    rec = homes.read_local_record()
    if rec and pid_alive(rec.get("master_pid")) and master_alive(rec["url"]):
        return rec
    return None


def _spawn(args: list[str], log_name: str, foreground: bool) -> subprocess.Popen:
    logs = homes.home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "stalwart.cli.main", *args]
    if foreground:
        return subprocess.Popen(cmd)
    out = open(logs / log_name, "ab")
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)


def wait_for_master(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if master_alive(url, timeout=1.0):
            return
        if proc.poll() is not None:
            log = homes.home() / "logs" / "master.log"
            raise StalwartError(f"the local master exited with code {proc.returncode}; see {log}")
        time.sleep(0.2)
    raise MasterUnavailable(f"the local master did not answer at {url} within {timeout:.0f} s")


def start(port: int | None = None, slots: int | None = None, foreground: bool = False, config: str | None = None,
          pool: str = "default") -> dict:
    """Start master and agent; returns the record written to $STALWART_HOME/local-cluster.json."""
    existing = running_local()
    if existing:
        return {**existing, "already_running": True}
    base = homes.home()
    base.mkdir(parents=True, exist_ok=True)
    port = port or pick_port()
    url = f"http://127.0.0.1:{port}"
    db = f"sqlite:///{base / 'master.db'}"
    args = ["master", "run", "--port", str(port), "--home", str(base)]
    args += ["--config", config] if config else ["--db", db]
    if config:
        from stalwart.config.master import load_master_config

        if not load_master_config(config).db_url:
            args += ["--db", db]
    master = _spawn(args, "master.log", foreground)
    wait_for_master(url, master)
    agent_args = ["agent", "run", "--master", url, "--token-file", str(homes.token_file(base)),
                  "--work-dir", str(base / "agent"), "--resource-pool", pool]
    if slots is not None:
        agent_args += ["--slots", str(slots)]
    agent = _spawn(agent_args, "agent.log", foreground)
    record = {"url": url, "master_pid": master.pid, "agent_pid": agent.pid, "home": str(base), "port": port}
    homes.write_local_record(record)
    if foreground:
        _wait_foreground(master, agent)
    return record


def _wait_foreground(master: subprocess.Popen, agent: subprocess.Popen) -> None:
    try:
        while master.poll() is None and agent.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for p in (agent, master):
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 10  # one grace period for both, then they are killed
        for p in (agent, master):
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        homes.local_record_path().unlink(missing_ok=True)


def stop() -> bool:
    """Stop the local cluster; False if none was running."""
    rec = homes.read_local_record()
    if not rec:
        return False
    stopped = False
    for key in ("agent_pid", "master_pid"):
        pid = rec.get(key)
        if pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
            stopped = True
            deadline = time.monotonic() + 15
            while pid_alive(pid) and time.monotonic() < deadline:
                _reap(pid)
                time.sleep(0.1)
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
    homes.local_record_path().unlink(missing_ok=True)
    return stopped


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
