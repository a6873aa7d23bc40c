"""A real Slurm cluster for the tests: one slurmctld and one slurmd per node, all on this host, started lazily once
per pytest run (xdist workers included) and stopped at its end.

The run directory (named in `STALWART_TEST_SLURM`), its lock and the reaper that cleans up after a dead controller
are `once_per_run`'s (`RUN`). The first test that needs the cluster calls `cluster()`: under the run's lock it
writes a private `slurm.conf` in the run directory (free TCP ports, state, spool, logs and pidfiles all in there;
/etc/slurm is never touched), makes sure a munged answers (reusing a running one), starts the daemons, waits until
every node is idle and records the cluster in `<run dir>/slurm.json`; every later call, in any worker, reads that
record. Clients find the cluster through `SLURM_CONF` (`SlurmCluster.env`). At the run's end `stop_all` cancels the
jobs, stops the daemons (and munged if this run started it) and removes the run directory.

The nodes are slurmd processes started with `slurmd -N name`, each on its own port (`SlurmdParameters=
config_overrides` lets them declare more CPUs than this host has): `PARTITIONS` names them.

Fixture (session scope): `slurm_cluster`. It skips, saying what to install, where this machine lacks Slurm or munge,
or where the tests do not run as root (the daemons run as root, `SlurmUser=root`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from once_per_run import RunDirectory, locked
from stalwart.testing import free_port

RUN = RunDirectory("STALWART_TEST_SLURM", "stalwart-sl-", "slurm_server", "the Slurm test cluster")
PARTITIONS: dict[str, dict[str, int]] = {  # partition -> node -> CPUs; the tests name these
    "rmconf_a": {"ca1": 1, "ca2": 1, "ca3": 2},  # the conformance suite's and join credentials' (rmconf_*)
    "rmconf_b": {"cb1": 4},
    "batch": {"b1": 2, "b2": 2},  # SlurmCli's own tests (tests/integration/test_slurm_cli.py)
    # one partition per end-to-end test, so that none waits for another's (tests/e2e/test_slurm_*.py)
    "pause": {"p1": 2},
    "requeue": {"r1": 2},
    "ddp": {"d1": 2},
    "ddp2": {"e1": 1, "e2": 1},
    "podman": {"o1": 2},
    "queue": {"q1": 2, "q2": 2},
    "restart": {"s1": 2},
    "upslurm": {"u1": 2},  # `stalwart up --slurm` (tests/e2e/test_up_slurm.py)
}
DEFAULT_PARTITION = "batch"
NEEDS = {"slurmctld": "slurm-wlm", "slurmd": "slurm-wlm", "sbatch": "slurm-wlm", "munged": "munge"}
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
MUNGE_RUN = pathlib.Path("/run/munge")
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SlurmCluster:
    """This run's Slurm: where its configuration is and thin helpers on it for the tests."""

    run_dir: pathlib.Path
    conf_path: pathlib.Path

    @property
    def env(self) -> dict[str, str]:
        """What a Slurm client needs in its environment to reach this cluster."""
        return {"SLURM_CONF": str(self.conf_path)}

    def partitions(self) -> dict[str, list[str]]:
        """Partition -> its node names."""
        return {name: list(nodes) for name, nodes in PARTITIONS.items()}

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """One Slurm client command against this cluster."""
        return _slurm(self.conf_path, list(argv), check=check)

    @contextlib.contextmanager
    def exclusive(self, *partitions: str) -> Iterator[SlurmCluster]:
        """Hold `partitions` for one test (an flock each, across xdist workers), starting from a clean state: no
        job left in them and every node of theirs idle."""
        unknown = sorted(set(partitions) - set(PARTITIONS))
        if unknown:
            raise ValueError(f"no such partition in the test cluster: {', '.join(unknown)} (have {list(PARTITIONS)})")
        with contextlib.ExitStack() as stack:
            for name in sorted(set(partitions)):  # one order everywhere: no deadlock between workers
                stack.enter_context(_flock(self.run_dir / f"partition-{name}.lock"))
            self._clean(sorted(set(partitions)))
            yield self

    def _clean(self, partitions: list[str]) -> None:
        _cancel_all(self.conf_path, partitions)
        nodes = [node for name in partitions for node in PARTITIONS[name]]
        deadline = time.monotonic() + START_TIMEOUT_S
        while any(self.squeue(name) for name in partitions):
            if time.monotonic() > deadline:
                raise RuntimeError(f"jobs left in {partitions} after scancel: {[self.squeue(p) for p in partitions]}")
            time.sleep(0.2)
        for node in nodes:
            self.set_node_state(node, "resume")
        _wait_idle(self.conf_path, nodes)

    def set_node_state(self, node: str, state: str, reason: str = "test") -> None:
        """`scontrol update` a node to down, drain or resume (resuming an idle node is no error)."""
        argv = ["scontrol", "update", f"nodename={node}", f"state={state}"]
        if state.lower() != "resume":
            argv.append(f"reason={reason}")
        done = self.run(*argv, check=False)
        if done.returncode != 0 and not (state.lower() == "resume" and "Invalid node state" in done.stderr):
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")

    def requeue(self, job_id: str) -> None:
        self.run("scontrol", "requeue", job_id)

    def cancel(self, job_id: str) -> None:
        self.run("scancel", job_id)

    def squeue(self, partition: str) -> list[dict[str, str]]:
        """The live jobs of a partition, every user's: job_id, name, state, reason, user, nodelist."""
        keys = ["job_id", "name", "state", "reason", "user", "nodelist"]
        out = self.run("squeue", "-h", "-a", "-p", partition, "-o", "\x1f".join(["%i", "%j", "%T", "%r", "%u", "%N"]))
        return [dict(zip(keys, line.split("\x1f"), strict=True)) for line in out.stdout.splitlines() if line]


def wait_for(what: str, probe: Callable[[], object], timeout_s: float = 30.0, interval_s: float = 0.1) -> object:
    """`probe()`'s first true answer, asked every `interval_s`; an AssertionError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := probe():
            return found
        time.sleep(interval_s)
    raise AssertionError(f"not within {timeout_s:g} s: {what}")


def missing() -> str | None:
    """Why this machine cannot run the test cluster (what to install), or None."""
    absent = sorted({package for binary, package in NEEDS.items() if shutil.which(binary, path=SBIN_PATH) is None})
    if absent:
        return f"the Slurm tests need slurmctld, slurmd and munged: apt-get install {' '.join(absent)}"
    if os.geteuid() != 0:
        return "the Slurm tests need root (slurmctld and slurmd run as root, SlurmUser=root)"
    return None


def cluster() -> SlurmCluster:
    """This run's Slurm, started now by whoever asks first (once per run, across xdist workers)."""
    run_dir = RUN.path()
    with locked(run_dir):
        state, failed = run_dir / "slurm.json", run_dir / "slurm.failed"
        if state.exists():
            raw = json.loads(state.read_text())
            return SlurmCluster(pathlib.Path(raw["run_dir"]), pathlib.Path(raw["conf_path"]))
        if failed.exists():
            raise RuntimeError(f"the Slurm test cluster failed to start earlier in this run: {failed.read_text()}")
        RUN.start_reaper(run_dir)
        try:
            started = _start(run_dir)
        except BaseException as err:
            failed.write_text(f"{type(err).__name__}: {err}")
            raise
        state.write_text(json.dumps({"run_dir": str(started.run_dir), "conf_path": str(started.conf_path)}))
        return started


def _start(run_dir: pathlib.Path) -> SlurmCluster:
    began = time.monotonic()
    run_dir.chmod(0o755)  # jobs submitted for another user (`sbatch --uid`) read their script in the slurmd's spool
    for sub in ("state", "log"):
        (run_dir / sub).mkdir(exist_ok=True)
    conf = run_dir / "slurm.conf"
    conf.write_text(_config(run_dir))
    _ensure_munge(run_dir)
    env = {**os.environ, "SLURM_CONF": str(conf), "PATH": SBIN_PATH}
    daemons = [["slurmctld", "-i"]] + [["slurmd", "-N", node] for nodes in PARTITIONS.values() for node in nodes]
    for argv in daemons:
        done = subprocess.run(argv, env=env, cwd=run_dir / "log", stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=30, start_new_session=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.strip()[-2000:]}\n"
                               f"{_logs(run_dir)}")
    _wait_idle(conf, [node for nodes in PARTITIONS.values() for node in nodes])
    (run_dir / "startup-seconds").write_text(f"{time.monotonic() - began:.2f}\n")
    return SlurmCluster(run_dir, conf)


def _config(run_dir: pathlib.Path) -> str:
    """The cluster's slurm.conf: every port free now, every file in the run directory."""
    ports: set[int] = set()
    while len(ports) < 1 + sum(len(nodes) for nodes in PARTITIONS.values()):
        ports.add(free_port())
    free = iter(sorted(ports))
    host = socket.gethostname().split(".")[0]
    lines = [
        f"ClusterName=st{os.getpid()}", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={next(free)}",
        "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
        f"StateSaveLocation={run_dir}/state", f"SlurmdSpoolDir={run_dir}/spool-%n",
        f"SlurmctldPidFile={run_dir}/slurmctld.pid", f"SlurmdPidFile={run_dir}/slurmd-%n.pid",
        f"SlurmctldLogFile={run_dir}/log/slurmctld.log", f"SlurmdLogFile={run_dir}/log/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "SchedulerType=sched/backfill",
        "SchedulerParameters=sched_interval=1,bf_interval=1", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core", "SlurmdParameters=config_overrides", "MpiDefault=none", "MailProg=/bin/true",
        "ReturnToService=1", "InactiveLimit=0", "MinJobAge=60", "KillWait=5", "JobRequeue=1",
    ]
    for nodes in PARTITIONS.values():
        lines += [f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={next(free)} CPUs={cpus} "
                  "RealMemory=1000 State=UNKNOWN" for node, cpus in nodes.items()]
    for name, nodes in PARTITIONS.items():
        default = " Default=YES" if name == DEFAULT_PARTITION else ""
        lines.append(f"PartitionName={name} Nodes={','.join(nodes)}{default} MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def _ensure_munge(run_dir: pathlib.Path) -> None:
    """Reuse a munged that answers; else start one (as its `munge` user) and mark it this run's to stop."""
    if _munge_answers():
        return
    MUNGE_RUN.mkdir(exist_ok=True)
    shutil.chown(MUNGE_RUN, "munge", "munge")
    key = pathlib.Path("/etc/munge/munge.key")
    if not key.exists() or key.stat().st_size == 0:
        key.write_bytes(os.urandom(1024))
        shutil.chown(key, "munge", "munge")
        key.chmod(0o400)
    # munged daemonizes: runuser returns once the daemon is up and is reaped here (no zombie is left to mislead
    # a `pgrep munged`; `munge -n` is the test that counts)
    subprocess.run(["runuser", "-u", "munge", "--", shutil.which("munged", path=SBIN_PATH) or "munged"],
                   check=True, capture_output=True, timeout=30, start_new_session=True)
    (run_dir / "munged-ours").write_text((MUNGE_RUN / "munged.pid").read_text())
    deadline = time.monotonic() + 10
    while not _munge_answers():
        if time.monotonic() > deadline:
            raise RuntimeError("munged was started but `munge -n` still fails after 10 s")
        time.sleep(0.1)


def _munge_answers() -> bool:
    try:
        return subprocess.run(["munge", "-n"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _slurm(conf: pathlib.Path, argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, env={**os.environ, "SLURM_CONF": str(conf)}, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def _wait_idle(conf: pathlib.Path, nodes: list[str]) -> None:
    """Until each of `nodes` is idle (sinfo), at most START_TIMEOUT_S."""
    deadline, states = time.monotonic() + START_TIMEOUT_S, {}
    while time.monotonic() < deadline:
        done = _slurm(conf, ["sinfo", "-h", "-N", "-o", "%N %T"], check=False)
        states = dict(line.split(None, 1) for line in done.stdout.splitlines() if " " in line)
        if all(states.get(node) == "idle" for node in nodes):
            return
        time.sleep(0.1)
    raise RuntimeError(f"Slurm nodes not idle after {START_TIMEOUT_S:.0f} s: {states}\n{_logs(conf.parent)}")


def _logs(run_dir: pathlib.Path) -> str:
    """The tail of the controller's log, for a failure's message."""
    log = run_dir / "log" / "slurmctld.log"
    return "slurmctld.log:\n" + log.read_text(errors="replace")[-2000:] if log.exists() else "(no slurmctld.log)"


@contextlib.contextmanager
def _flock(path: pathlib.Path) -> Iterator[None]:
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def stop_all(run_dir: pathlib.Path) -> None:
    """Cancel the run's jobs, stop its slurmds and slurmctld (and munged if this run started it), remove its
    directory (idempotent)."""
    if not run_dir.exists():
        return
    with locked(run_dir):
        conf = run_dir / "slurm.conf"
        if (run_dir / "slurmctld.pid").exists():
            _cancel_all(conf, list(PARTITIONS))
            deadline = time.monotonic() + 10  # let the slurmds end their jobs' processes
            while time.monotonic() < deadline and _slurm(conf, ["squeue", "-h"], check=False).stdout.strip():
                time.sleep(0.2)
        pid_files = [*run_dir.glob("slurmd-*.pid"), run_dir / "slurmctld.pid"]
        _stop([int(f.read_text().split()[0]) for f in pid_files if f.exists()])
        _stop(_stepds(conf))  # a job's slurmstepd that outlived its slurmd (it waits on the controller otherwise)
        if (run_dir / "munged-ours").exists():  # after the daemons that use it
            _stop([int((run_dir / "munged-ours").read_text().split()[0])])
    shutil.rmtree(run_dir, ignore_errors=True)


def _stepds(conf: pathlib.Path) -> list[int]:
    """The slurmstepd processes of this cluster's jobs (their environment names its slurm.conf)."""
    found = []
    for proc in pathlib.Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if (proc / "comm").read_text().strip() == "slurmstepd" and \
                    f"SLURM_CONF={conf}\0".encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
    return found


def _cancel_all(conf: pathlib.Path, partitions: list[str]) -> None:
    """Cancel every job of `partitions`, any user's (by id: scancel takes one partition only)."""
    listed = _slurm(conf, ["squeue", "-h", "-a", "-p", ",".join(partitions), "-o", "%i"], check=False)
    if ids := listed.stdout.split():
        _slurm(conf, ["scancel", *ids], check=False)


def _stop(pids: list[int]) -> None:
    """SIGTERM to all at once (a slurmd takes about 2 s to stop), SIGKILL after 5 s to those left."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            pids = [pid for pid in pids if _alive(pid)]
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# -- the pytest plugin -----------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    RUN.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    RUN.unconfigure(config)


@pytest.fixture(scope="session")
def slurm_cluster() -> SlurmCluster:
    """This run's Slurm cluster (skips where the machine cannot run it)."""
    if reason := missing():
        pytest.skip(reason)
    return cluster()
