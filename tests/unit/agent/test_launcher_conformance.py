"""The launcher conformance suite: every launcher in `agent.launchers.LAUNCHERS` runs real entrypoints the same way.

Each test runs on every target of `launcher_targets.TARGETS` (process, and Docker and Podman on the engines
`container_servers` starts once per test run; a container target skips where its engine is missing): exit
codes (a death by signal N is -N, as the agent reports it), both streams apart and in order while the run
runs, the environment exactly as the spec gives it, the working directory, a signal then a kill, the kill of
an entrypoint that ignores SIGTERM and of its children, the record of what runs (`list_started`,
`remove_survivors`), nothing left once the agent dies under kill -9 (for containers: none of its containers
within 10 s, running or not), and running as a non-root uid. Bind mounts (read-only or writable), the size
of /dev/shm and a setuid-root binary that stays non-root apply to container launchers only.
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
import uuid
from collections.abc import Iterator

import pytest

from container_images import SETUID_PYTHON
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
    launcher = target.launcher(tmp_path / "work", f"conformance-{uuid.uuid4().hex[:8]}")  # its own containers
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
    successor = target.launcher(launcher.work_root, launcher.agent_id)
    assert successor.remove_survivors() == [spec.allocation_id]
    assert run.wait() == -9
    assert successor.list_started() == [] and successor.remove_survivors() == []


AGENT = """import json, sys, time
from stalwart.agent.launchers import LAUNCHERS, ContainerOptions, LaunchSpec, Mount
name, root, agent_id, spec, url = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5:]
options = ContainerOptions(**container) if (container := spec.pop("container")) else None
mounts, argv = tuple(Mount(**m) for m in spec.pop("mounts")), tuple(spec.pop("argv"))
launcher = LAUNCHERS[name](root, agent_id, *url)
run = launcher.start(LaunchSpec(**spec, argv=argv, mounts=mounts, container=options))
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
              "image": spec.image, "fence": True, "mounts": [m.__dict__ for m in spec.mounts],
              "container": spec.container and {"allow_root": spec.container.allow_root}}
    agent = subprocess.Popen([sys.executable, "-c", AGENT, target.name, str(launcher.work_root), launcher.agent_id,
                              json.dumps(fields), *([target.engine_url] if target.engine_url else [])],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert agent.stdout is not None and agent.stdout.readline().strip().isdigit()
        _beating(heartbeat)
    finally:
        agent.kill()
        agent.wait()
        killed_at = time.monotonic()
    assert _stopped(heartbeat, within=10.0), "the run outlived its agent's kill -9 by more than 10 s"
    assert launcher.list_started() == []
    if target.engine_url:  # `docker ps -a` shows none of its containers, running or not, within the 10 s
        while _containers_of(target.engine_url, launcher.agent_id):
            assert time.monotonic() - killed_at < 10.0, "a container outlived its agent's kill -9 by 10 s"
            time.sleep(0.1)


def _containers_of(engine_url: str, agent_id: str) -> list[object]:
    import docker

    api = docker.APIClient(base_url=engine_url, version="1.41")
    found: list[object] = api.containers(all=True, filters={"label": f"ai.stalwart.agent={agent_id}"})
    return found


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


def test_bind_mounts_are_seen_at_their_container_paths_read_only_or_writable(runs: Runs, target: Target,
                                                                             tmp_path: pathlib.Path) -> None:
    if not target.container:
        pytest.skip("containers only: a process sees the host's file system, mounts are a no-op")
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    for host in (ro, rw):
        host.mkdir()
        (host / "f").write_text(f"from the host's {host.name}")
    code = ("import pathlib\n"
            "for d in ('/probe-ro', '/probe-rw'):\n"
            "    print(pathlib.Path(d, 'f').read_text())\n"
            "    try:\n        pathlib.Path(d, 'g').write_text('from the run')\n"
            "    except OSError as err:\n        print('read-only' if err.errno == 30 else err)\n"
            "    else:\n        print('written')\n")
    mounts = (Mount(str(ro), "/probe-ro", read_only=True), Mount(str(rw), "/probe-rw", read_only=False))
    run, out = runs.start(runs.spec(runs.py(code), mounts=mounts))
    assert run.wait() == 0
    assert out.all()[0] == "from the host's ro\nread-only\nfrom the host's rw\nwritten\n"
    assert not (ro / "g").exists() and (rw / "g").read_text() == "from the run"


def test_shm_size_is_the_specs(runs: Runs, target: Target) -> None:
    if not target.container:
        pytest.skip("containers only: a process shares the host's /dev/shm")
    size = 96 * 1024 * 1024  # not an engine's default (64 MiB)
    code = "import os\ns = os.statvfs('/dev/shm')\nprint(s.f_blocks * s.f_frsize)\n"
    run, out = runs.start(runs.spec(runs.py(code), shm_size=size))
    assert run.wait() == 0
    assert out.all()[0] == f"{size}\n"


def test_a_setuid_root_binary_in_the_image_does_not_make_a_run_root(runs: Runs, target: Target) -> None:
    if not target.container:
        pytest.skip("containers only: a process runs the host's binaries under the host's rules")
    uid = next(n for n in range(54321, 60000) if not _has_user(n))
    code = (f"import os; s = os.stat({SETUID_PYTHON!r})\n"  # the binary is setuid root: it would make euid 0
            "print(oct(s.st_mode & 0o4000), s.st_uid, os.getuid(), os.geteuid())\n")
    run, out = runs.start(runs.spec([SETUID_PYTHON, "-c", code], cwd="/", user=RunAs(uid, uid)))
    assert run.wait() == 0
    assert out.all()[0].split() == ["0o4000", "0", str(uid), str(uid)]  # no-new-privileges: euid stays the run's


def test_the_process_launcher_refuses_an_image(tmp_path: pathlib.Path) -> None:
    runs = Runs(TARGETS["process"](), LAUNCHERS["process"](tmp_path, "agent"), tmp_path)
    spec = runs.spec(runs.py("pass"))
    with pytest.raises(LaunchError, match="cannot run image team/trainer:1"):
        runs.launcher.start(type(spec)(**{**spec.__dict__, "image": "team/trainer:1"}))
