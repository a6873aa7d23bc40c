"""Nothing a run started outlives it, not even what left its process group (issue 32): real runs of the harness's
launcher (`python -m stalwart.harness.launch --local CONFIG`, the supervisor and child subreaper) on the process
launcher, whose entrypoints leave behind a `setsid` child and a double-forked daemon, each writing a heartbeat file.
Killed by the agent, ended by themselves, or with their agent killed under kill -9: every heartbeat stops. The
launcher stays out of the way otherwise: exit statuses (a death by signal N is -N) and signals pass through.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import uuid

import yaml

from stalwart.agent.launchers import LaunchSpec, ProcessLauncher
from stalwart.process_tree import descendants, kill_tree

BEAT = "import sys, time\nwhile True:\n    open(sys.argv[1], 'a').write('.')\n    time.sleep(0.05)\n"
ESCAPES = """
import os, subprocess, sys, time
beat, scratch = sys.argv[1], sys.argv[2]
# a child in a session of its own (as sshd's per-connection children make themselves)
subprocess.Popen([sys.executable, '-c', BEAT, scratch + '/setsid'], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# a daemon: the middle process sets up a new session, forks the worker and exits, orphaning it
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c', BEAT, scratch + '/daemon'])
    os._exit(0)
while not all(os.path.exists(scratch + '/' + n) for n in ('setsid', 'daemon')):
    time.sleep(0.05)
print('ready', flush=True)
"""


def _stopped(beat: pathlib.Path, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        before = beat.stat().st_size
        time.sleep(0.4)
        if beat.stat().st_size == before:
            return True
    return False


def _config(scratch: pathlib.Path, tail: str) -> str:
    entry = scratch / "entry.py"
    entry.write_text(f"BEAT = {BEAT!r}\n" + ESCAPES + tail)
    config = scratch / "config.yaml"
    config.write_text(yaml.safe_dump({"entrypoint": [sys.executable, str(entry), "x", str(scratch)]}))
    return str(config)


def _start(tmp_path: pathlib.Path, tail: str, fence: bool = False) -> tuple[ProcessLauncher, object, pathlib.Path]:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    launcher = ProcessLauncher(tmp_path / "work", "tree")
    argv = (sys.executable, "-m", "stalwart.harness.launch", "--local", _config(scratch, tail))
    env = {k: v for k, v in os.environ.items() if k.startswith(("PATH", "PYTHON", "HOME"))}
    run = launcher.start(LaunchSpec(uuid.uuid4().hex, argv, str(scratch), env, fence=fence))
    return launcher, run, scratch


def _ready(run: object, word: bytes = b"ready") -> None:
    """Wait until the entrypoint prints `word` (ESCAPES prints "ready" once its escapees run)."""
    lines = run.output("stdout")  # type: ignore[attr-defined]
    for chunk in lines:
        if word in chunk:
            return
    raise AssertionError(f"the entrypoint never printed {word!r}")


def test_a_killed_run_takes_what_left_its_process_group_with_it(tmp_path):
    _launcher, run, scratch = _start(tmp_path, "import time\ntime.sleep(600)\n")
    _ready(run)
    run.kill()
    assert run.wait() == -9
    assert _stopped(scratch / "setsid") and _stopped(scratch / "daemon")


def test_a_run_that_ends_by_itself_leaves_nothing_behind_and_keeps_its_status(tmp_path):
    _launcher, run, scratch = _start(tmp_path, "raise SystemExit(3)\n")
    assert run.wait() == 3
    assert _stopped(scratch / "setsid") and _stopped(scratch / "daemon")


def test_a_death_by_signal_is_reported_as_that_signal_and_signals_reach_the_entrypoint(tmp_path):
    tail = ("import signal, time\n"
            "signal.signal(signal.SIGUSR1, lambda *a: open(scratch + '/usr1', 'w').close())\n"
            "print('armed', flush=True)\n"
            "while True:\n    time.sleep(0.05)\n")
    _launcher, run, scratch = _start(tmp_path, tail)
    _ready(run, b"armed")  # its handler is in place: a SIGUSR1 before it would have ended the process
    run.signal(signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not (scratch / "usr1").exists():
        assert time.monotonic() < deadline, "SIGUSR1 never reached the entrypoint"
        time.sleep(0.05)
    run.signal(signal.SIGTERM)
    assert run.wait() == -signal.SIGTERM
    assert _stopped(scratch / "setsid") and _stopped(scratch / "daemon")


AGENT = """import json, sys, time
from stalwart.agent.launchers import LaunchSpec, ProcessLauncher
root, spec = sys.argv[1], json.loads(sys.argv[2])
run = ProcessLauncher(root, "tree").start(LaunchSpec(**{**spec, "argv": tuple(spec["argv"])}, fence=True))
print(run.pid, flush=True)
time.sleep(600)
"""


def test_an_agent_killed_with_sigkill_leaves_none_of_its_runs_processes(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    argv = [sys.executable, "-m", "stalwart.harness.launch", "--local",
            _config(scratch, "import time\ntime.sleep(600)\n")]
    spec = {"allocation_id": uuid.uuid4().hex, "argv": argv, "cwd": str(scratch), "env": dict(os.environ)}
    agent = subprocess.Popen([sys.executable, "-c", AGENT, str(tmp_path / "work"), json.dumps(spec)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert agent.stdout is not None and agent.stdout.readline().strip().isdigit()
        deadline = time.monotonic() + 30
        while not ((scratch / "setsid").exists() and (scratch / "daemon").exists()):
            assert time.monotonic() < deadline, "the entrypoint never started its processes"
            time.sleep(0.05)
    finally:
        agent.kill()
        agent.wait()
    assert _stopped(scratch / "setsid") and _stopped(scratch / "daemon")


def test_kill_tree_stops_then_kills_every_descendant_and_spares_what_it_is_told_to(tmp_path):
    code = ("import os, subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
            "print('ready', flush=True)\ntime.sleep(600)\n")
    root = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    below: set[int] = set()
    try:
        assert root.stdout is not None and root.stdout.readline().strip() == "ready"
        below = descendants(root.pid)
        assert len(below) == 1
        assert kill_tree(root.pid, spare=below) == {root.pid}  # the spared child is left alone
        assert root.wait(5) == -9
        for child in below:
            os.kill(child, 0)  # still there (now another reaper's)
    finally:
        for child in below:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        if root.poll() is None:
            root.kill()
