"""How tasks end (issue 32, acceptance 5), on a real master and agent: a command killed by its owner, one idle past
its `idle_timeout`, and one whose agent is killed with kill -9. Each leaves behind a process that left the task's
process group (`setsid`, as sshd's per-connection children do) and a double-forked daemon; after each ending no
process of the task remains (a scan of /proc for its marker), and the task says why it ended.
"""

from __future__ import annotations

import json
import pathlib
import re
import time
import uuid

import pytest

from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

LEAVES_BEHIND = """
import os, subprocess, sys, time
marker = sys.argv[1]
sleeper = [sys.executable, '-c', 'import time; time.sleep(600)', marker]
subprocess.Popen(sleeper, start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, sleeper)
    os._exit(0)
print('ready', flush=True)
time.sleep(600)
"""


def _processes_with(marker: str) -> list[int]:
    """The processes whose command line, environment or working directory names `marker`."""
    found = []
    for proc in pathlib.Path("/proc").glob("[0-9]*"):
        try:
            seen = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes() + \
                str((proc / "cwd").readlink()).encode()
        except OSError:
            continue
        if marker.encode() in seen:
            found.append(int(proc.name))
    return found


def _run_dir_of(c: LocalTestCluster, task_id: str) -> str:
    """The agent's directory of the run of `task_id` (every process of it has its info file in its environment)."""
    for info in (c.home / "agent-0").glob("*/run/info.json"):
        if json.loads(info.read_text()).get("task_id") == task_id:
            return str(info.parent.parent)
    raise AssertionError(f"no run of {task_id} on agent-0")


def _start(c: LocalTestCluster, *config: str) -> tuple[str, str]:
    marker = f"task-marker-{uuid.uuid4().hex}"
    overrides = [arg for kv in ("resources.slots=0", *config) for arg in ("--config", kv)]
    made = c.cli("cmd", "run", "-d", *overrides, "python3", "-c", LEAVES_BEHIND, marker, check=True)
    cmd_id = re.search(r"Launched command (\d+)", made.stdout).group(1)
    c.wait_for(lambda: len(_processes_with(marker)) >= 3, timeout=120, what=f"command {cmd_id}'s processes")
    return cmd_id, marker


def _ended(c: LocalTestCluster, cmd_id: str, timeout: float = 60) -> dict:
    def ended() -> dict | None:
        cmd = c.client().get_command(int(cmd_id)).command
        return cmd.model_dump() if cmd.state == "TERMINATED" else None
    return c.wait_for(ended, timeout=timeout, what=f"command {cmd_id} to end")


def _none_left(marker: str, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while _processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_killed_idle_and_agent_lost_tasks_leave_no_process_and_say_why(tmp_path) -> None:
    with LocalTestCluster(tmp_path / "home", agent_timeout=6.0) as c:
        killed, killed_marker = _start(c)
        idle, idle_marker = _start(c, "idle_timeout=3s")

        c.cli("cmd", "kill", killed, check=True)
        ended = _ended(c, killed)
        assert ended["result"] == "CANCELED" and ended["end_reason"] == "killed by admin"
        assert _none_left(killed_marker), "a process of the killed command remains"

        ended = _ended(c, idle)
        assert ended["result"] == "CANCELED" and ended["end_reason"] == "idle for more than 3s (its idle_timeout)"
        assert _none_left(idle_marker), "a process of the idle command remains"
        assert "idle for more than 3s" in c.cli("cmd", "describe", idle, check=True).stdout

        lost, lost_marker = _start(c)
        c.kill_agent(0)
        assert _none_left(lost_marker), "a process of the command outlived its agent's kill -9"
        ended = _ended(c, lost, timeout=60)
        assert ended["result"] == "ERROR" and ended["end_reason"] == "its agent agent-0 was lost"


def _launched(c: LocalTestCluster, kind: str, *args: str) -> int:
    made = c.cli(kind, "start", "-d", *args, check=True)
    return int(re.search(r"Launched (?:notebook|TensorBoard|shell) (\d+)", made.stdout).group(1))


def _serving(c: LocalTestCluster, task_id: int) -> bool:
    return c.client().get_command(task_id).command.proxy_path is not None


def test_a_notebook_a_tensorboard_and_a_shell_leave_nothing_when_their_agent_is_killed(tmp_path) -> None:
    from tensorboard_runs import finished_experiments

    with LocalTestCluster(tmp_path / "home", agent_timeout=6.0) as c:
        (exp_id, _trial), = finished_experiments(c, 1, prefix="lost")
        tasks = {"notebook": _launched(c, "notebook", "--config", "resources.slots=0"),
                 "tensorboard": _launched(c, "tensorboard", str(exp_id)),
                 "shell": _launched(c, "shell", "--config", "resources.slots=0")}
        for kind, task_id in tasks.items():
            c.wait_for(lambda t=task_id: _serving(c, t), timeout=180, what=f"the {kind} to serve")
        markers = {kind: _run_dir_of(c, f"{kind}-{task_id}") for kind, task_id in tasks.items()}
        assert all(_processes_with(marker) for marker in markers.values()), markers
        c.kill_agent(0)
        for kind, marker in markers.items():
            assert _none_left(marker), f"a process of the {kind} outlived its agent's kill -9"
        for kind, task_id in tasks.items():
            ended = _ended(c, str(task_id), timeout=60)
            assert ended["result"] == "ERROR" and ended["end_reason"] == "its agent agent-0 was lost", (kind, ended)
