"""Tasks run as their owners' OS users (issue 20, acceptance 4).

Two OS users are made with `useradd`; a real master and a root agent run; Stalwart users ann and bob are linked to
them with `stalwart user link-with-agent-user`. bob's trial runs first and reports its uid and work directory;
then ann's trial reports its uid and tries to read the cluster token, the master's database, bob's work directory
(and a file in it), the agent's work root, its lock and its own credential: every read fails with PermissionError.
An agent that is not root refuses such a task with a reason saying it must run as root.

The trial processes run the agent's Python interpreter as the OS users. Where that interpreter is out of their
reach (e.g. under /root), the test builds a tiny virtual environment on the system's Python of the same version
that reads the same site-packages, and runs the agent with it.
"""

from __future__ import annotations

import base64
import grp
import json
import os
import pathlib
import pwd
import shutil
import site
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from stalwart.api.errors import ForbiddenError
from stalwart.client import Client
from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                       reason="running tasks as OS users needs root: the test creates OS users with useradd and runs "
                              "the agent as root"),
]

MARK = "OSUSER-PROBE "
PROBE = '''import json, os, sys

def attempt(path):
    try:
        try:
            with open(path, "rb") as f:
                f.read(1)
        except IsADirectoryError:
            os.listdir(path)
        return "read"
    except PermissionError:
        return "PermissionError"
    except OSError as err:
        return type(err).__name__

seen = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "cwd": os.getcwd(),
        "tries": {path: attempt(path) for path in sys.argv[1:]}}
print("MARK" + json.dumps(seen), flush=True)

from determined import core

with core.init() as ctx:
    for op in ctx.searcher.operations():
        ctx.train.report_validation_metrics(op.length, {"loss": 0.5})
        op.report_completed(0.5)
'''.replace("MARK", MARK)
CONFIG = """name: {name}
entrypoint: {entrypoint}
searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
max_restarts: 0
"""


@dataclass
class OsUser:
    name: str
    uid: int
    gid: int
    group: str


@dataclass
class Setup:
    cluster: LocalTestCluster
    work_root: pathlib.Path
    users: dict[str, OsUser]  # Stalwart user name -> its OS user
    clients: dict[str, Client]
    context_b64: str


def _useradd() -> OsUser:
    name = f"stw{uuid.uuid4().hex[:10]}"
    subprocess.run(["useradd", "-m", "-U", "-s", "/bin/sh", name], check=True, capture_output=True)
    entry = pwd.getpwnam(name)
    return OsUser(name, entry.pw_uid, entry.pw_gid, grp.getgrgid(entry.pw_gid).gr_name)


def _runs_as(python: str, user: OsUser) -> bool:
    """Whether `user` can run `python` and import the launcher and the agent with it."""
    try:
        res = subprocess.run([python, "-c", "import stalwart.harness.launch, stalwart.agent.daemon"], user=user.uid,
                             group=user.gid, extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"},
                             capture_output=True, timeout=120)
    except PermissionError:  # the interpreter (or a directory on its way) is out of the user's reach
        return False
    return res.returncode == 0


def _task_python(user: OsUser, scratch: pathlib.Path) -> str | None:
    """An interpreter the OS users can run that imports this Stalwart: the current one, else a small virtual
    environment on the system's Python of the same version reading this one's site-packages."""
    if _runs_as(sys.executable, user):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None:
        return None
    venv = scratch / "venv"
    subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    (venv_site,) = (venv / "lib").glob("python*/site-packages")
    (venv_site / "stalwart_here.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in site.getsitepackages()))
    python = str(venv / "bin" / "python")
    return python if _runs_as(python, user) else None


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="stalwart-osusers-", dir="/tmp"))  # every OS user may enter it
    os.chmod(scratch, 0o755)
    made: list[OsUser] = []
    cluster: LocalTestCluster | None = None
    try:
        made = [_useradd(), _useradd()]
        python = _task_python(made[0], scratch)
        if python is None:
            pytest.skip(f"no Python interpreter with this Stalwart that OS user {made[0].name} may run "
                        f"({sys.executable} is out of its reach and no system {sys.version_info[:2]} was found)")
        cluster = LocalTestCluster(tmp_path_factory.mktemp("osusers") / "home", agents=0).start()
        work_root = scratch / "agent-work"
        with open(cluster.home / "agent-0.log", "ab") as log:  # the agent runs as root, with that interpreter
            cluster.agents.append(subprocess.Popen(
                [python, "-m", "stalwart.cli.main", "agent", "run", "--master", cluster.url, "--agent-id", "agent-0",
                 "--slots", "2", "--work-dir", str(work_root), "--keep-work-dirs", "10"],
                env=cluster.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True))
        admin = cluster.client()
        users = {"ann": made[0], "bob": made[1]}
        clients = {}
        for name, os_user in users.items():
            admin.create_user(name, password=f"{name}-pw")
            cluster.cli("user", "link-with-agent-user", name, "--agent-uid", str(os_user.uid), "--agent-gid",
                        str(os_user.gid), "--agent-user", os_user.name, "--agent-group", os_user.group, check=True)
            clients[name] = cluster.client(session_token=None)
            clients[name].login(name, f"{name}-pw")
        context = scratch / "context"
        context.mkdir()
        (context / "probe.py").write_text(PROBE)
        yield Setup(cluster, work_root, users, clients, base64.b64encode(pack_context(context).data).decode())
    finally:
        if cluster is not None:
            cluster.stop()
        for os_user in made:
            subprocess.run(["userdel", "-r", os_user.name], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


def _run_probe(s: Setup, owner: str, *paths: str) -> dict[str, Any]:
    """Run a trial of `owner` that tries to read `paths`; what it saw."""
    client = s.clients[owner]
    entrypoint = json.dumps(["python3", "probe.py", *paths])
    created = client.create_experiment(CONFIG.format(name=f"probe-{owner}", entrypoint=entrypoint),
                                       s.context_b64).experiment
    assert created is not None
    exp_id = created.id
    s.cluster.wait_for(lambda: client.get_experiment(exp_id).experiment.state.value in ("COMPLETED", "ERROR"),
                       what=f"{owner}'s probe experiment to end")
    trial_id = client.get_experiment(exp_id).trials[0].id
    lines = [line["log"] for line in s.cluster.client().stream_lines(f"/trials/{trial_id}/logs", follow="false")]
    seen = [json.loads(text[text.index(MARK) + len(MARK):]) for text in lines if MARK in text]
    assert client.get_experiment(exp_id).experiment.state.value == "COMPLETED", \
        "\n".join(lines[-40:]) + s.cluster.log("agent-0.log")[-3000:]
    assert len(seen) == 1, lines
    return seen[0]


@pytest.fixture(scope="module")
def bob_saw(setup: Setup) -> dict[str, Any]:
    return _run_probe(setup, "bob")


@pytest.fixture(scope="module")
def ann_saw(setup: Setup, bob_saw: dict[str, Any]) -> dict[str, Any]:
    bob_workdir = bob_saw["cwd"]
    home = setup.cluster.home
    return _run_probe(setup, "ann", str(home / "cluster-token"), str(home / "master.db"), bob_workdir,
                      os.path.join(bob_workdir, "probe.py"), str(setup.work_root),
                      str(setup.work_root / "agent.lock"), str(setup.work_root / "agent-credential.json"))


def test_the_link_shows_in_describe_and_list(setup: Setup) -> None:
    ann = setup.users["ann"]
    described = json.loads(setup.cluster.cli("user", "describe", "ann", "--json", check=True).stdout)
    assert described["agentUserGroup"] == {"agentUid": ann.uid, "agentGid": ann.gid, "agentUser": ann.name,
                                           "agentGroup": ann.group}
    listed = json.loads(setup.cluster.cli("user", "list", "--json", check=True).stdout)
    by_name = {u["username"]: u for u in listed["users"]}
    assert by_name["bob"]["agentUserGroup"]["agentUid"] == setup.users["bob"].uid
    assert by_name["admin"].get("agentUserGroup") is None


def test_each_trial_runs_as_its_owners_os_user(ann_saw: dict[str, Any], bob_saw: dict[str, Any],
                                               setup: Setup) -> None:
    for saw, owner in ((ann_saw, "ann"), (bob_saw, "bob")):
        os_user = setup.users[owner]
        assert (saw["uid"], saw["gid"]) == (os_user.uid, os_user.gid), owner
        assert set(saw["groups"]) <= {os_user.gid}, f"{owner}'s trial kept supplementary groups: {saw['groups']}"


def test_a_trial_reads_neither_the_masters_files_nor_another_users_work(ann_saw: dict[str, Any]) -> None:
    assert len(ann_saw["tries"]) == 7, ann_saw
    assert {path: outcome for path, outcome in ann_saw["tries"].items() if outcome != "PermissionError"} == {}


def test_the_master_home_and_its_secrets_are_private(setup: Setup) -> None:
    home = setup.cluster.home
    assert home.stat().st_mode & 0o777 == 0o700
    for name in ("cluster-token", "master.db"):
        assert (home / name).stat().st_mode & 0o777 == 0o600, name
    assert (setup.work_root / "agent-credential.json").stat().st_mode & 0o777 == 0o600  # the agent's own


def test_the_link_is_admins_only_and_validated(setup: Setup) -> None:
    ann = setup.clients["ann"]
    with pytest.raises(ForbiddenError, match="set_agent_user"):
        ann.link_agent_user("ann", uid=0, gid=0, user="root", group="root")
    assert ann.get_user("ann").agentUserGroup is not None  # unchanged
    bad = setup.cluster.cli("user", "link-with-agent-user", "ann", "--agent-uid", "-1", "--agent-gid", "0",
                            "--agent-user", "x y", "--agent-group", "g")
    assert bad.returncode != 0 and "agentUid" in bad.stdout + bad.stderr and "Traceback" not in bad.stderr, bad
    missing = setup.cluster.cli("user", "link-with-agent-user", "ann", "--agent-uid", "5")
    assert missing.returncode != 0 and "--agent-gid" in missing.stdout + missing.stderr, missing


def test_an_agent_that_is_not_root_refuses_to_run_a_task_as_an_os_user(setup: Setup) -> None:
    os_user = setup.users["ann"]
    run_as = {"uid": setup.users["bob"].uid, "gid": setup.users["bob"].gid, "user": "bob-os", "group": "bob-os"}
    code = ("import pathlib, sys\n"
            "from stalwart.agent.os_users import CannotRunAs\n"
            "from stalwart.agent.process import TrialProcess\n"
            f"p = TrialProcess({{'allocation_id': 'a' * 32, 'run_as': {run_as!r}}}, pathlib.Path('/nonexistent'),"
            " 'agent-x', None, None)\n"
            "try:\n    p.prepare('')\nexcept CannotRunAs as err:\n    print(err)\n    sys.exit(3)\n")
    python = setup.cluster.agents[0].args[0]
    res = subprocess.run([python, "-c", code], user=os_user.uid, group=os_user.gid, extra_groups=[], cwd="/",
                         env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120)
    assert res.returncode == 3, res
    assert "must run as root to run tasks as OS users" in res.stdout
