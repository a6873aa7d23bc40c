"""agent/fencing.py and harness/fence.py on real processes: the work-directory lock, process records, the
kill of survivors, the lease, and the launcher's watchdog."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest

from stalwart.agent.fencing import (
    AgentAlreadyRunning,
    AgentLock,
    Lease,
    ProcessRecord,
    kill_recorded,
    proc_start_time,
    running,
)
from stalwart.api.errors import InvalidRequest


def _gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_second_lock_on_the_same_work_directory_is_refused_and_a_successor_knows_its_predecessor(tmp_path):
    first = AgentLock(tmp_path, "a")
    first.acquire()
    with pytest.raises(AgentAlreadyRunning, match="another agent .pid \\d+. is running with work directory"):
        AgentLock(tmp_path, "a").acquire()
    first.release()  # as the kernel does when the process dies
    successor = AgentLock(tmp_path, "a")
    successor.acquire()
    assert successor.previous == first.incarnation and successor.incarnation != first.incarnation
    successor.release()
    other_id = AgentLock(tmp_path, "b")
    other_id.acquire()
    assert other_id.previous is None  # another agent id does not inherit anything
    other_id.release()


def test_an_unusable_work_directory_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(InvalidRequest, match="cannot use it as the agent's work directory"):
        AgentLock(tmp_path / "file", "a").acquire()


def test_recorded_survivors_are_killed_and_dead_or_reused_records_are_left_alone(tmp_path):
    survivor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        ProcessRecord(tmp_path / "alloc-1").path.parent.mkdir()
        ProcessRecord(tmp_path / "alloc-1").write(survivor.pid)
        # a record whose pid now names another process (different start time) must not be killed
        bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        (tmp_path / "alloc-2").mkdir()
        (tmp_path / "alloc-2" / "process.json").write_text(
            f'{{"pgid": {bystander.pid}, "start_time": {proc_start_time(bystander.pid) - 1}}}')
        assert kill_recorded(tmp_path) == ["alloc-1"]
        assert survivor.wait(5) == -9
        assert bystander.poll() is None
        assert not ProcessRecord(tmp_path / "alloc-1").path.exists()
    finally:
        for p in (survivor, bystander):
            p.kill()
            p.wait()


def test_the_lease_expires_a_margin_before_the_agent_timeout_counted_from_the_last_call_sent():
    lease = Lease()
    assert not lease.expired()  # no timeout known before registration: never
    lease.set_timeout(0.4)  # 0.4 less a quarter = 0.3 s
    lease.renew(time.monotonic())
    assert not lease.expired()
    time.sleep(0.35)
    assert lease.expired()
    lease.renew(time.monotonic() - 10)  # an older call never moves the lease back
    assert lease.expired()
    lease.renew(time.monotonic())
    assert not lease.expired()


WATCHED = """
import os, sys, time
from stalwart.harness.fence import watch_agent
watch_agent()
child = os.fork()
if child == 0:
    time.sleep(60)
    os._exit(0)
print(child, flush=True)
time.sleep(60)
"""


def test_the_launchers_watchdog_kills_the_whole_group_when_the_agents_end_of_the_pipe_closes():
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen([sys.executable, "-c", WATCHED], env={**os.environ, "STALWART_FENCE_FD": str(read_fd)},
                            pass_fds=(read_fd,), stdout=subprocess.PIPE, text=True, start_new_session=True)
    os.close(read_fd)
    try:
        grandchild = int(proc.stdout.readline())
        time.sleep(0.3)
        assert proc.poll() is None and not _gone(grandchild, 0.1)  # alive while the agent's end is open
        os.close(write_fd)  # the agent dies
        assert proc.wait(5) == -9
        assert _gone(grandchild)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()


def test_without_a_fence_fd_the_launcher_starts_no_watchdog(monkeypatch):
    from stalwart.harness import fence

    def children() -> set[str]:
        return {pid for task in pathlib.Path("/proc/self/task").iterdir()
                for pid in (task / "children").read_text().split()}

    monkeypatch.delenv("STALWART_FENCE_FD", raising=False)
    before = children()
    fence.watch_agent()  # returns at once, forks nothing
    assert children() == before
