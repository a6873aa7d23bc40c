"""`stalwart up --slurm` end to end (issue 30): the CLI, as a subprocess, puts a master in front of this run's real
Slurm (tests/slurm_server.py), with no agent of its own.

One pool per partition; a second `up --slurm` says it runs already; the digits example
completes as a Slurm job of `--slurm-user root` (the admin has no linked OS user); an experiment of a Stalwart user
linked to a fresh OS user (useradd) runs as a Slurm job of that OS user (squeue's %u) and completes; `down` stops
the master and leaves no Slurm job of it. Before all that, with Slurm's tools out of reach, `up --slurm` fails
naming what to check, and starts nothing.

What the linked OS user needs (the master runs as root and keeps $STALWART_HOME at 0700): the jobs' output
directory (`job_output_dir`) and the checkpoint storage outside that home, both writable by it, and a Python it
may run for the one-shot agent (`agent_command`; this repository's interpreter lives under /root, so the test
builds a tiny venv on the system's Python, as tests/integration/test_tasks_as_os_users.py does). They come in
through `up --slurm --config`, whose resource manager keys of `type: slurm` are kept."""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
import yaml

from integration.helpers import DIGITS, digits_config
from integration.test_tasks_as_os_users import OsUser, _task_python, _useradd
from slurm_server import DEFAULT_PARTITION, PARTITIONS, wait_for
from stalwart.client import Client
from stalwart.context import pack_context
from stalwart.testing import free_port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                       reason="the linked-user run needs root: it creates an OS user with useradd"),
]
PARTITION = "upslurm"  # its own: the other Slurm tests run beside it


def cli(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=env["STALWART_HOME"] + "-cwd")


@pytest.fixture
def scratch():
    """A directory every OS user may enter (pytest's tmp_path, under /tmp/pytest-of-root, is 0700)."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="stalwart-upslurm-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def os_user():
    made = _useradd()
    yield made
    subprocess.run(["userdel", "-r", made.name], capture_output=True)


def master_config(scratch: pathlib.Path, python: str) -> pathlib.Path:
    """What the linked OS user needs, given to `up --slurm --config` (see the module's docstring)."""
    for sub in ("jobs", "checkpoints"):
        (scratch / sub).mkdir()
        (scratch / sub).chmod(0o1777)
    path = scratch / "master.yaml"
    path.write_text(yaml.safe_dump({
        "resource_manager": {"type": "slurm", "poll_interval": 0.5, "job_output_dir": str(scratch / "jobs"),
                             "agent_command": [python, "-m", "stalwart.agent.slurm_job"]},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(scratch / "checkpoints")},
        "security": {"allow_root_tasks": True},  # the admin's jobs run as --slurm-user root
    }))
    return path


def state_of(client: Client, exp_id: int) -> str:
    return client.get_experiment(exp_id).experiment.state.value


def test_up_slurm_makes_a_pool_per_partition_runs_trials_as_jobs_of_their_os_users_and_down_cancels(
        slurm_cluster, scratch, os_user: OsUser, monkeypatch):
    began = time.monotonic()
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf_path))
    python = _task_python(os_user, scratch)
    if python is None:
        pytest.skip(f"no Python with this Stalwart that OS user {os_user.name} may run")
    env = {k: v for k, v in os.environ.items() if k not in ("STALWART_MASTER", "DET_MASTER")}
    env["STALWART_HOME"] = str(scratch / "home")
    cwd = pathlib.Path(env["STALWART_HOME"] + "-cwd")  # the master's cwd: one the OS user may not enter
    cwd.mkdir(mode=0o700)
    config = master_config(scratch, python)
    no_slurm = cli({**env, "PATH": "/nonexistent"}, "up", "--slurm")  # Slurm's tools out of reach: a clear error
    assert no_slurm.returncode == 4 and "Traceback" not in no_slurm.stderr, no_slurm.stderr
    assert "could not ask Slurm for its partitions" in no_slurm.stderr and "scontrol is not on PATH" in no_slurm.stderr
    assert not (scratch / "home").exists()  # nothing started, nothing written
    with slurm_cluster.exclusive(PARTITION):
        try:
            up = cli(env, "up", "--slurm", "--slurm-user", "root", "--config", str(config), "--port",
                     str(free_port()))
            assert up.returncode == 0, up.stdout + up.stderr
            assert "in front of Slurm" in up.stdout
            rec = json.loads((scratch / "home" / "local-cluster.json").read_text())
            assert "agent_pid" not in rec and rec["slurm_prefix"].startswith("stalwart-"), rec
            again = cli(env, "up", "--slurm")
            assert again.returncode == 0 and "already running" in again.stdout, again.stdout + again.stderr
            _check_pools(env)
            _run_digits_as_admin(env, rec)
            _run_as_linked_user(env, rec, slurm_cluster, os_user)
        finally:
            down = cli(env, "down")
        assert down.returncode == 0 and "Stopped" in down.stdout, down.stdout + down.stderr
        assert not [j for j in slurm_cluster.squeue(PARTITION) if j["name"].startswith(rec["slurm_prefix"])]
        assert not running(rec["master_pid"])
    print(f"\ntest_up_slurm: {time.monotonic() - began:.1f} s")


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie, not yet reaped by whoever adopted it, does not)."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def failure_details(rec: dict) -> str:
    """The jobs' own output and the master's log's tail, for a failure's message."""
    home = pathlib.Path(rec["home"])
    outs = "".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(home.parent.glob("jobs/*.out")))
    return f"\n{outs}\n--- master.log\n{(home / 'logs' / 'master.log').read_text()[-4000:]}"


def _check_pools(env: dict) -> None:
    """One pool per partition: the master knows each (and names them all for one it does not know)."""
    partitions = [DEFAULT_PARTITION, *(p for p in PARTITIONS if p != DEFAULT_PARTITION)]  # as sinfo lists them
    for pool in partitions:
        listed = cli(env, "resource-pool", "list-bindings", pool)
        assert listed.returncode == 0, listed.stdout + listed.stderr
    unknown = cli(env, "resource-pool", "list-bindings", "default")
    assert unknown.returncode != 0 and f"the pools are {', '.join(partitions)}" in unknown.stderr, unknown.stderr
    written = yaml.safe_load((pathlib.Path(env["STALWART_HOME"]) / "master-slurm.yaml").read_text())
    assert written["resource_manager"]["default_compute_resource_pool"] == DEFAULT_PARTITION
    assert written["resource_manager"]["slot_type"] == "cpu"


def _experiment_file(env: dict) -> pathlib.Path:
    path = pathlib.Path(env["STALWART_HOME"] + "-exp.yaml")
    path.write_text(digits_config(searcher__max_length={"batches": 40}, min_validation_period={"batches": 20},
                                  resources={"resource_pool": PARTITION}, max_restarts=0))
    return path


def _run_digits_as_admin(env: dict, rec: dict) -> None:
    created = cli(env, "experiment", "create", str(_experiment_file(env)), str(DIGITS), "--follow", timeout=300)
    assert created.returncode == 0, created.stdout[-3000:] + created.stderr[-3000:] + failure_details(rec)
    admin = Client(rec["url"])
    admin.login("admin", "")
    exps = admin.get("/experiments")["experiments"]
    assert [e["state"] for e in exps] == ["COMPLETED"], exps


def _run_as_linked_user(env: dict, rec: dict, slurm_cluster, os_user: OsUser) -> None:
    made = cli(env, "user", "create", "lin", "--password", "lin-pw")
    assert made.returncode == 0, made.stdout + made.stderr
    linked = cli(env, "user", "link-with-agent-user", "lin", "--agent-uid", str(os_user.uid), "--agent-gid",
                 str(os_user.gid), "--agent-user", os_user.name, "--agent-group", os_user.group)
    assert linked.returncode == 0, linked.stdout + linked.stderr
    lin = Client(rec["url"])
    lin.login("lin", "lin-pw")
    context = base64.b64encode(pack_context(DIGITS).data).decode()
    created = lin.create_experiment(_experiment_file(env).read_text(), context).experiment
    assert created is not None
    ours = wait_for("the linked user's job RUNNING in squeue", timeout_s=180, interval_s=0.5, probe=lambda: [
        j for j in slurm_cluster.squeue(PARTITION) if j["name"].startswith(rec["slurm_prefix"])
        and j["state"] == "RUNNING"])
    assert [j["user"] for j in ours] == [os_user.name], ours
    wait_for("the linked user's experiment to end",
             lambda: state_of(lin, created.id) in ("COMPLETED", "ERROR", "CANCELED"), timeout_s=240, interval_s=0.5)
    assert state_of(lin, created.id) == "COMPLETED", failure_details(rec)
