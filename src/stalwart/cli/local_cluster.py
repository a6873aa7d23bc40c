"""The zero-setup local cluster: start master + one agent as background processes, find them, stop them."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from stalwart.api.errors import (
    AuthError,
    ForbiddenError,
    InvalidRequest,
    InvalidStateError,
    MasterUnavailable,
    StalwartError,
)
from stalwart.api.models.cluster import MasterInfo
from stalwart.cli import home as homes, output
from stalwart.cli.kept_settings import (
    config_to_use,
    keep,
    kept_config,
    kept_port,
    kept_port_file,
    read_text,
    refuse_new_config,
)
from stalwart.cli.local_ports import pick_port, port_free
from stalwart.client import Client, credentials

if TYPE_CHECKING:
    from stalwart.config.master import MasterConfig

T = TypeVar("T")

def master_info(url: str, timeout: float = 2.0) -> MasterInfo | None:
    """What the master at `url` says of itself (its cluster id), or None if none answers (as a master)."""
    with Client(url, timeout=timeout) as client:
        try:
            return client.master_info()
        except StalwartError:
            return None


def master_alive(url: str, timeout: float = 2.0) -> bool:
    return master_info(url, timeout) is not None


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


def ours(pid: int | None, role: str, base: pathlib.Path) -> bool:
    """Whether `pid` is this home's `stalwart master run` / `agent run` (not a process that reused the pid)."""
    if not pid_alive(pid):
        return False
    try:
        argv = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return (state != "Z" and b"stalwart.cli.main" in argv and role.encode() in argv
            and any(str(base).encode() in a for a in argv))


def cluster_id_file(base: pathlib.Path) -> pathlib.Path:
    return base / "cluster-id"


def running_local() -> homes.LocalRecord | None:
    """The record of a local cluster whose master answers as this home's cluster, else None."""
    rec = homes.read_local_record()
    if not rec or not ours(rec.get("master_pid"), "master", pathlib.Path(rec.get("home") or homes.home())):
        return None
    info = master_info(rec["url"])
    if info is None or (rec.get("cluster_id") and info.cluster_id != rec["cluster_id"]):
        return None
    return rec


def _spawn(args: list[str], log_name: str, foreground: bool) -> subprocess.Popen[bytes]:
    logs = homes.home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "stalwart.cli.main", *args]
    if foreground:
        return subprocess.Popen(cmd)
    with open(logs / log_name, "ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def _log_tail(name: str, lines: int = 8) -> str:
    path = homes.home() / "logs" / name
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def wait_for_master(url: str, proc: subprocess.Popen[bytes], base: pathlib.Path, timeout: float = 60.0) -> str:
    """Wait until the master we started answers at `url` as our cluster; returns its cluster id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = master_info(url, timeout=1.0)
        try:
            ours_id = cluster_id_file(base).read_text().strip()
        except OSError:
            ours_id = None
        if info is not None and ours_id and info.cluster_id == ours_id and proc.poll() is None:
            return ours_id
        if proc.poll() is not None:
            log = homes.home() / "logs" / "master.log"
            if info is not None:
                raise InvalidStateError(
                    f"{url} is already served by another Stalwart master (cluster {info.cluster_id}), not "
                    f"this home's ({base}); choose another port with --port, or stop that master")
            raise StalwartError(f"the local master exited with code {proc.returncode}; see {log}:\n"
                                f"{_log_tail('master.log')}")
        time.sleep(0.2)
    raise MasterUnavailable(f"the local master did not answer at {url} within {timeout:.0f} s; see "
                            f"{homes.home() / 'logs' / 'master.log'}")


def _registered(client: Client, agent_id: str, since: float) -> bool:
    """The agent is connected and has been heard from since `since` (false while the master cannot say)."""
    try:
        agents = client.list_agents().agents
    except StalwartError:
        return False
    return any(a.id == agent_id and a.connected and (a.last_seen or 0) >= since for a in agents)


def log_in_local_admin(url: str) -> str | None:
    """Zero setup: the CLI's session with the local master. A kept one (the auth file, the environment) if the
    master takes it, else the bootstrap admin's while its password is empty (a local master listens on loopback
    only); None when neither works (the admin has a password: `stalwart user login admin`)."""
    kept = credentials.session_for(url)
    if kept is not None and credentials.still_valid(url, kept):
        return kept
    try:
        return credentials.log_in(url, "admin", "")
    except (AuthError, ForbiddenError):
        return None


def wait_for_agent(url: str, agent_id: str, proc: subprocess.Popen[bytes] | None, since: float,
                   timeout: float = 60.0) -> None:
    """Wait until the local agent has registered with the master (else fail showing the agent's error)."""
    session = log_in_local_admin(url)
    if session is None:
        output.info("The local admin has a password: log in with `stalwart user login admin` (not waiting for the "
             "agent to register).")
        return
    deadline = time.monotonic() + timeout
    with Client(url, timeout=2.0, session_token=session) as client:
        while time.monotonic() < deadline:
            if _registered(client, agent_id, since):
                return
            if proc is not None and proc.poll() is not None:
                raise StalwartError(f"the local agent exited with code {proc.returncode}; from "
                                    f"{homes.home() / 'logs' / 'agent.log'}:\n{_log_tail('agent.log')}")
            time.sleep(0.2)
    raise StalwartError(f"the local agent did not register with the master within {timeout:.0f} s; from "
                        f"{homes.home() / 'logs' / 'agent.log'}:\n{_log_tail('agent.log')}")


def start(port: int | None = None, slots: int | None = None, foreground: bool = False, config: str | None = None,
          pool: str | None = None, runtime: str | None = None) -> homes.StartedRecord:
    """Start master and agent; returns the record written to $STALWART_HOME/local-cluster.json.

    After a crash, the survivors of the last start are reused: a master that still answers, an agent
    that still runs (its trials too), and the recorded port, so that nothing runs twice. After `down`, the
    port the master had is used again (kept_settings.KEPT_PORT), unless --port or the master config names another.
    The agent's runtime (`up --runtime`), like its slots, is the one given, else the last start's until `down`, else
    `process`.
    """
    _check_numbers(port, slots)
    base = homes.home()
    base.mkdir(parents=True, exist_ok=True)
    rec, master_pid, agent_pid = _survivors(base)
    survivors = bool(master_pid or agent_pid)
    if survivors and config is not None:
        refuse_new_config(base, rec, config)
    if master_pid and (agent_pid or rec.get("slurm_prefix")) and running_local():  # (in front of Slurm: no agent)
        log_in_local_admin(rec["url"])
        return {**rec, "already_running": True, "same_config": config is not None}
    if survivors:
        _refuse_to_change_survivors(base, rec, foreground, port)
    # what is restarted after a crash is the cluster that was running: its config (database), slots and pool,
    # unless given again (`stalwart down` forgets slots and pool; the master config stays with the home)
    kept_before = read_text(kept_config(base))  # put back if a master started with a new --config fails
    config = (rec.get("config") if survivors else None) or config_to_use(base, config)
    slots = slots if slots is not None else rec.get("slots")
    runtime = runtime or rec.get("runtime") or "process"
    pool = pool or rec.get("pool") or _from_config(config, lambda c: c.default_compute_pool) or "default"
    if master_pid and (rec.get("slurm_prefix") or not master_alive(rec["url"], timeout=5.0)):  # (no agent for it)
        raise InvalidStateError(f"this home's master (pid {master_pid}) runs but does not answer at {rec['url']}; "
                                f"stop the cluster with `stalwart down`, then start it again")
    port = (port or rec.get("port") or _from_config(config, lambda c: c.port)
            or _kept_port_if_free(base, master_pid))
    url = f"http://127.0.0.1:{port}"
    master = None
    if master_pid:
        cluster_id = rec.get("cluster_id")
    else:
        det_port = determined_port(config, port)
        master, cluster_id = _run_master(base, port, config, foreground, kept_before, det_port)
        master_pid = master.pid
        rec["det_url"] = f"http://127.0.0.1:{det_port}"
    agent = None
    agent_id = socket.gethostname()
    since = time.time() - 1.0  # a registration (or a survivor's re-registration) after this start
    if not agent_pid:
        agent = _start_agent(base, url, agent_id, pool, slots, foreground, runtime)
        agent_pid = agent.pid
    record: homes.StartedRecord = {
        "url": url, "master_pid": master_pid, "agent_pid": agent_pid, "home": str(base), "port": port,
        "cluster_id": cluster_id, "config": config, "slots": slots, "pool": pool, "runtime": runtime}
    if rec.get("det_url"):
        record["det_url"] = rec["det_url"]
    _write_record(base, record)  # before waiting: `down` must find what was started, whatever happens next
    wait_for_agent(url, agent_id, agent, since)
    if foreground:
        _wait_foreground(agent, master)
    return record


def start_slurm(port: int | None, foreground: bool, make_config: Callable[[pathlib.Path], str]) -> homes.StartedRecord:
    """`up --slurm`: this home's master alone (Slurm's jobs run the trials), with the master config `make_config(home)`
    writes when it starts one. One that runs already is left as it is; one with an agent refused."""
    _check_numbers(port, None)
    base = homes.home()
    rec, master_pid, agent_pid = _survivors(base)
    if agent_pid or (master_pid and not rec.get("slurm_prefix")):
        raise InvalidStateError(f"this home's cluster already runs with a local agent ({base}); stop it with "
                                f"`stalwart down` first, then start it in front of Slurm with `stalwart up --slurm`")
    if master_pid:  # this home's master in front of Slurm: `start` says it runs already, or what is wrong with it
        return start(port=port, foreground=foreground)
    config = make_config(base)
    port = port or _from_config(config, lambda c: c.port) or _kept_port_if_free(base, None)
    det_port = determined_port(config, port)
    master, cluster_id = _run_master(base, port, config, foreground, read_text(kept_config(base)), det_port)
    record: homes.StartedRecord = {"url": f"http://127.0.0.1:{port}", "master_pid": master.pid, "home": str(base),
                                   "port": port, "cluster_id": cluster_id, "config": config,
                                   "det_url": f"http://127.0.0.1:{det_port}",
                                   "slurm_prefix": _from_config(config, lambda c: c.slurm.job_name_prefix) or ""}
    _write_record(base, record)
    log_in_local_admin(record["url"])
    if foreground:
        _wait_foreground(master)
    return record


def _check_numbers(port: int | None, slots: int | None) -> None:
    """Refuse a --slots or a --port that cannot be."""
    if slots is not None and slots < 0:
        raise InvalidRequest(f"--slots: expected an integer >= 0, got {slots}")
    if port is not None and not 0 < port < 65536:
        raise InvalidRequest(f"--port: expected a port number in 1..65535, got {port}")


def _survivors(base: pathlib.Path) -> tuple[homes.LocalRecord, int | None, int | None]:
    """This home's record (empty when it is another home's, or none), and the pids of its master and agent
    that still run: the processes of the last start, which a new start reuses."""
    rec = homes.read_local_record() or {}
    if rec.get("home") and pathlib.Path(rec["home"]) != base:
        rec = {}
    master_pid = rec.get("master_pid") if ours(rec.get("master_pid"), "master", base) else None
    # the agent holding this home's work directory, whoever started it (`up`, or a restart by hand)
    agent_pid = next((pid for pid in (rec.get("agent_pid"), _agent_state_pid(base / "agent"))
                      if ours(pid, "agent", base)), None)
    return rec, master_pid, agent_pid


def _refuse_to_change_survivors(base: pathlib.Path, rec: homes.LocalRecord, foreground: bool,
                                port: int | None) -> None:
    """A start that finds part of this home's cluster running cannot move it to the foreground or another port."""
    if foreground:
        raise InvalidStateError(f"this home's cluster still runs in the background ({base}); stop it with "
                                f"`stalwart down` before starting it in the foreground")
    if port is not None and port != rec.get("port"):
        raise InvalidStateError(f"this home's cluster still runs on port {rec.get('port')} ({base}); use that "
                                f"port, or stop it first with `stalwart down`")


def _write_record(base: pathlib.Path, record: homes.LocalRecord) -> None:
    """Record what was started (local-cluster.json, gone at `down`) and keep its port (kept after `down`)."""
    homes.write_local_record(record)
    keep(kept_port_file(base), f"{record['port']}\n")


def _kept_port_if_free(base: pathlib.Path, master_pid: int | None) -> int:
    """The port for a start that names none: the one this home's master had before (its URL stays the same for
    every bookmark), refused with the reason when something else holds it now; else 8080, or a free one."""
    port = kept_port(base)
    if port is None:
        return pick_port()
    if not master_pid and not port_free(port):
        other = master_info(f"http://127.0.0.1:{port}")
        who = f"another Stalwart master (cluster {other.cluster_id})" if other else "another program"
        raise InvalidStateError(
            f"port {port}, where this home's cluster listened before (its URL http://127.0.0.1:{port}), is now in "
            f"use by {who}; stop that program, or start this cluster on another port with `stalwart up --port N` "
            f"(kept for later starts)")
    return port


def determined_port(config: str | None, port: int) -> int:
    """The port of the master's Determined listener: the master config's `determined_api.port`, else the one after
    the master's (8081 beside the default 8080) when it is free, else a free one."""
    named = _from_config(config, lambda c: c.determined_api_port)
    if named:
        return named
    return pick_port(port + 1 if port < 65535 else port - 1)


def _run_master(base: pathlib.Path, port: int, config: str | None, foreground: bool,
                kept_before: str | None, det_port: int) -> tuple[subprocess.Popen[bytes], str]:
    """Start this home's master (its Determined listener on `det_port`) and wait until it answers: the process and
    its cluster id. A master that does not come up leaves the home's kept config as it was before this start
    (`kept_before`)."""
    master = _start_master(base, port, config, foreground, det_port)
    try:
        return master, wait_for_master(f"http://127.0.0.1:{port}", master, base)
    except StalwartError:
        keep(kept_config(base), kept_before)  # a config the master refused is not kept
        raise


def _start_master(base: pathlib.Path, port: int, config: str | None, foreground: bool,
                  det_port: int) -> subprocess.Popen[bytes]:
    """Spawn this home's master on `port` and its Determined listener on `det_port` (with `config`; its database in
    the home unless the config names one)."""
    url = f"http://127.0.0.1:{port}"
    if not port_free(port):
        other = master_info(url)
        who = f"another Stalwart master (cluster {other.cluster_id})" if other else "another program"
        raise InvalidStateError(f"port {port} is already in use by {who}; choose another port with --port")
    db = f"sqlite:///{base / 'master.db'}"
    args = ["master", "run", "--port", str(port), "--home", str(base), "--determined-port", str(det_port)]
    args += ["--config", config] if config else ["--db", db]
    if config and not _from_config(config, lambda c: c.db_url):
        args += ["--db", db]
    cluster_id_file(base).unlink(missing_ok=True)  # the master writes it again once it holds its database
    return _spawn(args, "master.log", foreground)


def _start_agent(base: pathlib.Path, url: str, agent_id: str, pool: str, slots: int | None,
                 foreground: bool, runtime: str = "process") -> subprocess.Popen[bytes]:
    """Spawn this home's agent (its work directory in the home) in `pool`, running tasks with `runtime`."""
    args = ["agent", "run", "--master", url, "--token-file", str(homes.token_file(base)),
            "--work-dir", str(base / "agent"), "--resource-pool", pool, "--agent-id", agent_id,
            "--runtime", runtime]
    if slots is not None:
        args += ["--slots", str(slots)]
    return _spawn(args, "agent.log", foreground)


def _from_config(config: str | None, setting: Callable[[MasterConfig], T]) -> T | None:
    """A setting of a master config file (`port`; `default_compute_pool`, the pool the local agent joins)."""
    if config is None:
        return None
    from stalwart.config.master import load_master_config

    return setting(load_master_config(config))


def _wait_foreground(*procs: subprocess.Popen[bytes] | None) -> None:
    """Run until one of the processes started here ends (or Ctrl-C), then stop them all."""
    started = [p for p in procs if p is not None]
    try:
        while started and all(p.poll() is None for p in started):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for p in started:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 10  # one grace period for all, then they are killed
        for p in started:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        homes.local_record_path().unlink(missing_ok=True)


def stop() -> bool:
    """Stop the local cluster (agent first, so that it ends its trials; then the master); False if none ran.

    Besides the recorded processes, an agent still holding this home's work directory (it records its
    pid there) is stopped too: nothing this cluster started outlives `stalwart down`.
    """
    base = homes.home()
    rec = homes.read_local_record() or {}
    agent_pids = dict.fromkeys([rec.get("agent_pid"), _agent_state_pid(base / "agent")])
    targets = [(pid, role) for pid, role in [*((p, "agent") for p in agent_pids), (rec.get("master_pid"), "master")]
               if pid]
    stopped = False
    for pid, role in targets:
        if not ours(pid, role, base):
            continue
        stopped = True
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while ours(pid, role, base) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)
        if ours(pid, role, base):  # its trials die with it (their watchdogs see it go)
            os.kill(pid, signal.SIGKILL)
            _reap(pid)
    homes.local_record_path().unlink(missing_ok=True)
    return stopped


def _agent_state_pid(work_dir: pathlib.Path) -> int | None:
    """The pid the agent of `work_dir` recorded (agent/fencing.py writes agent-state.json)."""
    try:
        pid = json.loads((work_dir / "agent-state.json").read_text()).get("pid")
    except (OSError, ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) else None


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
