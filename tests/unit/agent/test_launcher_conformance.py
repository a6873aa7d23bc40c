"""The launcher conformance suite: every launcher in `agent.launchers.LAUNCHERS` runs real entrypoints the same way.

Each test runs on every target of `launcher_targets.TARGETS` (one per launcher; a container launcher's target
skips where its engine is missing): exit codes (a death by signal N is -N, as the agent reports it), both
streams apart and in order while the run runs, the environment exactly as the spec gives it, the working
directory, a signal then a kill, the kill of an entrypoint that ignores SIGTERM and of its children, the
record of what runs (`list_started`, `remove_survivors`), nothing left once the agent dies under kill -9, and
running as a non-root uid. Mounts and shm size apply to container launchers only (a no-op for processes).
"""

from __future__ import annotations

import json
import os
import pathlib
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from launcher_targets import TARGETS, Runs, Target
from stalwart.agent.launchers import LAUNCHERS, Launcher, LaunchError, Mount, RunAs

READY = 'print("ready", flush=True)\n'
SLEEP = "import time\nwhile True:\n    time.sleep(0.1)\n"
HEARTBEAT = "import sys, time\nwhile True:\n    open(sys.argv[1], 'a').write('.')\n    time.sleep(0.05)\n"


@pytest.fixture(params=sorted(TARGETS))
def target(request: pytest.FixtureRequest) -> Target:
    return TARGETS[request.param]()


@pytest.fixture
def launcher(target: Target, tmp_path: pathlib.Path) -> Iterator[Launcher]:
    launcher = LAUNCHERS[target.name](tmp_path / "work", "conformance-agent")
    yield launcher
    launcher.remove_survivors(timeout=5.0)  # whatever a failed test left running


@pytest.fixture
def runs(target: Target, launcher: Launcher, tmp_path: pathlib.Path) -> Runs:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return Runs(target, launcher, scratch)


def _stopped(heartbeat: pathlib.Path, within: float = 10.0) -> bool:
    """Whether whatever writes `heartbeat` has stopped writing it within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        before = heartbeat.stat().st_size
        time.sleep(0.5)
        if heartbeat.stat().st_size == before:
            return True
    return False


def _beating(heartbeat: pathlib.Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not (heartbeat.exists() and heartbeat.stat().st_size > 2):
        assert time.monotonic() < deadline, "the heartbeat never started"
        time.sleep(0.05)


def test_every_launcher_has_a_target() -> None:
    assert set(TARGETS) == set(LAUNCHERS)


@pytest.mark.parametrize(("code", "exit_code"), [
    ("pass", 0),
    ("import sys; sys.exit(3)", 3),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -9),
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", -15),
])
def test_exit_codes(runs: Runs, code: str, exit_code: int) -> None:
    run, out = runs.start(runs.spec(runs.py(code)))
    assert run.wait() == exit_code
    out.all()


def test_both_streams_come_apart_and_in_order_with_a_long_last_line(runs: Runs) -> None:
    long = "x" * (3 * 1024 * 1024)  # no newline at its end
    code = ("import sys\n"
            "for i in range(2000):\n"
            "    (sys.stdout if i % 2 else sys.stderr).write(f'line {i}\\n')\n"
            "    (sys.stdout if i % 2 else sys.stderr).flush()\n"
            f"sys.stdout.write('x' * {len(long)})\n")
    run, out = runs.start(runs.spec(runs.py(code)))
    assert run.wait() == 0
    stdout, stderr = out.all()
    assert stdout == "".join(f"line {i}\n" for i in range(1, 2000, 2)) + long
    assert stderr == "".join(f"line {i}\n" for i in range(0, 2000, 2))


def test_output_streams_while_the_run_runs(runs: Runs) -> None:
    run, out = runs.start(runs.spec(runs.py("import sys\nsys.stderr.write('err first\\n')\n" + READY + SLEEP)))
    out.wait_for("stdout", "ready")
    out.wait_for("stderr", "err first")
    run.kill()
    assert run.wait() == -9


def test_the_environment_is_exactly_the_specs(runs: Runs, target: Target,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STALWART_AGENTS_OWN_SECRET", "never-passed-on")
    env = {"PATH": "/usr/bin:/bin", "PLAIN": "1", "EMPTY": "", "SPACES": " a b ", "UNICODE": "é∂",
           "EQUALS": "a=b"}
    run, out = runs.start(runs.spec(["/usr/bin/env"], env=env))
    assert run.wait() == 0
    seen = dict(line.split("=", 1) for line in out.all()[0].splitlines())
    assert {k: seen.get(k) for k in env} == env
    assert set(seen) - set(env) <= target.engine_env, seen


def test_the_working_directory_is_the_specs(runs: Runs) -> None:
    cwd = runs.scratch / "sub dir"
    cwd.mkdir()
    run, out = runs.start(runs.spec(runs.py("import os; print(os.getcwd())"), cwd=str(cwd)))
    assert run.wait() == 0
    assert out.all()[0] == f"{cwd}\n"


def test_a_signal_reaches_the_entrypoint_then_a_kill_ends_it(runs: Runs, launcher: Launcher) -> None:
    code = ("import os, signal\n"  # os.write: the signal may come while print('ready') is still in the buffer
            "signal.signal(signal.SIGTERM, lambda *_: os.write(1, b'got TERM\\n'))\n" + READY + SLEEP)
    spec = runs.spec(runs.py(code))
    run, out = runs.start(spec)
    out.wait_for("stdout", "ready")
    run.signal(signal.SIGTERM)
    out.wait_for("stdout", "got TERM")
    assert spec.allocation_id in {s.allocation_id for s in launcher.list_started()}  # it handled it: still runs
    run.kill()
    assert run.wait() == -9
    run.kill()  # after the end: nothing happens
    run.signal(signal.SIGTERM)


def test_an_entrypoint_ignoring_sigterm_is_killed_with_its_children(runs: Runs, launcher: Launcher) -> None:
    heartbeat = runs.scratch / "heartbeat"
    code = ("import signal, subprocess, sys\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            f"subprocess.Popen([sys.executable, '-c', {HEARTBEAT!r}, {str(heartbeat)!r}])\n" + READY + SLEEP)
    spec = runs.spec(runs.py(code))
    run, out = runs.start(spec)
    out.wait_for("stdout", "ready")
    _beating(heartbeat)
    run.signal(signal.SIGTERM)
    time.sleep(0.5)
    assert spec.allocation_id in {s.allocation_id for s in launcher.list_started()}
    run.kill()
    assert run.wait() == -9
    assert _stopped(heartbeat), "a child of the killed entrypoint still runs"
    out.all()


def test_what_an_entrypoint_leaves_behind_when_it_exits_goes_with_it(runs: Runs) -> None:
    heartbeat = runs.scratch / "heartbeat"
    code = ("import subprocess, sys, time\n"
            f"subprocess.Popen([sys.executable, '-c', {HEARTBEAT!r}, {str(heartbeat)!r}],"
            " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            f"while not __import__('os').path.exists({str(heartbeat)!r}):\n    time.sleep(0.05)\n")
    run, out = runs.start(runs.spec(runs.py(code)))
    assert run.wait() == 0
    assert _stopped(heartbeat), "a child outlived its run's end"
    out.all()


def test_list_started_names_what_runs_and_not_what_ended(runs: Runs, launcher: Launcher) -> None:
    long_spec, short_spec = runs.spec(runs.py(READY + SLEEP)), runs.spec(runs.py("pass"))
    long_run, long_out = runs.start(long_spec)
    short_run, _ = runs.start(short_spec)
    long_out.wait_for("stdout", "ready")
    assert short_run.wait() == 0
    started = {s.allocation_id: s.id for s in launcher.list_started()}
    assert set(started) == {long_spec.allocation_id} and started[long_spec.allocation_id] == long_run.id
    long_run.kill()
    assert long_run.wait() == -9
    assert launcher.list_started() == []


def test_a_restarted_agent_removes_the_survivors_of_its_predecessor(runs: Runs, target: Target,
                                                                   launcher: Launcher) -> None:
    spec = runs.spec(runs.py(READY + SLEEP))
    run, out = runs.start(spec)
    out.wait_for("stdout", "ready")
    successor = LAUNCHERS[target.name](launcher.work_root, launcher.agent_id)
    assert successor.remove_survivors() == [spec.allocation_id]
    assert run.wait() == -9
    assert successor.list_started() == [] and successor.remove_survivors() == []


AGENT = """import json, sys, time
from stalwart.agent.launchers import LAUNCHERS, LaunchSpec
name, root, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
run = LAUNCHERS[name](root, "conformance-agent").start(LaunchSpec(**{**spec, "argv": tuple(spec["argv"])}))
print(run.pid, flush=True)
time.sleep(600)
"""


def test_nothing_outlives_an_agent_killed_with_sigkill(runs: Runs, target: Target, launcher: Launcher) -> None:
    heartbeat = runs.scratch / "heartbeat"
    code = ("try:\n    from stalwart.harness.fence import watch_agent\nexcept ImportError:\n    pass\n"
            "else:\n    watch_agent()  # the harness's launcher does this first\n"
            "import subprocess, sys\n"
            f"subprocess.Popen([sys.executable, '-c', {HEARTBEAT!r}, {str(heartbeat)!r}])\n" + SLEEP)
    spec = runs.spec(runs.py(code), fence=True)
    fields = {"allocation_id": spec.allocation_id, "argv": list(spec.argv), "cwd": spec.cwd, "env": {},
              "image": spec.image, "fence": True}
    agent = subprocess.Popen([sys.executable, "-c", AGENT, target.name, str(launcher.work_root),
                              json.dumps(fields)], stdout=subprocess.PIPE, text=True)
    try:
        assert agent.stdout is not None and agent.stdout.readline().strip().isdigit()
        _beating(heartbeat)
    finally:
        agent.kill()
        agent.wait()
    assert _stopped(heartbeat, within=10.0), "the run outlived its agent's kill -9 by more than 10 s"
    assert launcher.list_started() == []


def test_a_run_as_another_uid_has_that_uid_and_gid_and_no_other_group(runs: Runs, target: Target) -> None:
    if target.image is None and os.geteuid() != 0:
        pytest.skip("a process runs as another uid only when the agent is root")
    uid = next(n for n in range(54321, 60000) if not _has_user(n))  # a uid no one on this machine has
    spec = runs.spec(["/bin/sh", "-c", "id -u; id -g; id -G"], cwd="/", user=RunAs(uid, uid))
    run, out = runs.start(spec)
    assert run.wait() == 0
    assert out.all()[0].split() == [str(uid)] * 3


def _has_user(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def test_a_bind_mount_is_seen_at_its_container_path_read_only(runs: Runs, target: Target,
                                                              tmp_path: pathlib.Path) -> None:
    if not target.container:
        pytest.skip("containers only: a process sees the host's file system, mounts are a no-op")
    host = tmp_path / "host"
    host.mkdir()
    (host / "f").write_text("from the host")
    code = ("import pathlib\nprint(pathlib.Path('/stalwart-probe/f').read_text())\n"
            "try:\n    pathlib.Path('/stalwart-probe/g').write_text('x')\nexcept OSError:\n    print('read-only')\n")
    run, out = runs.start(runs.spec(runs.py(code), mounts=(Mount(str(host), "/stalwart-probe", read_only=True),)))
    assert run.wait() == 0
    assert out.all()[0] == "from the host\nread-only\n"
    assert not (host / "g").exists()


def test_shm_size_is_the_specs(runs: Runs, target: Target) -> None:
    if not target.container:
        pytest.skip("containers only: a process shares the host's /dev/shm")
    code = "import os\ns = os.statvfs('/dev/shm')\nprint(s.f_blocks * s.f_frsize)\n"
    run, out = runs.start(runs.spec(runs.py(code), shm_size=64 * 1024 * 1024))
    assert run.wait() == 0
    assert out.all()[0] == f"{64 * 1024 * 1024}\n"


def test_the_process_launcher_refuses_an_image(tmp_path: pathlib.Path) -> None:
    runs = Runs(TARGETS["process"](), LAUNCHERS["process"](tmp_path, "agent"), tmp_path)
    spec = runs.spec(runs.py("pass"))
    with pytest.raises(LaunchError, match="cannot run image team/trainer:1"):
        runs.launcher.start(type(spec)(**{**spec.__dict__, "image": "team/trainer:1"}))
