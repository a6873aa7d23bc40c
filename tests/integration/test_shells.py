"""Shells (issue 32) on a real master and agent in rbac mode, with a real sshd and a real ssh: `stalwart shell
start`, then `shell open` through the master's proxy (the WebSocket tunnel to sshd's TCP port).

alice owns the shells. bob has no role, vic is a Viewer and eddie an Editor of Uncategorized (where the shells are),
and admin is a ClusterAdmin: none of them may fetch a shell's key or open its tunnel. A killed shell leaves no
process of it behind (sshd, its per-connection children, the session's programs); an idle one ends by itself,
unless a session is open.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from helpers_auth import bearer, log_in
from stalwart.client.auth_file import AuthFile
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

RBAC = "security:\n  authz:\n    type: rbac\n"
OTHERS = {"bob": None, "vic": "Viewer", "eddie": "Editor"}
FAST_PROBE = "environment.environment_variables=[STALWART_SERVICE_BUSY_EVERY_S=1]"


class World:
    def __init__(self, c: LocalTestCluster, envs: dict[str, dict[str, str]], tokens: dict[str, str]) -> None:
        self.c, self.envs, self.tokens = c, envs, tokens

    def cli(self, user: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=self.envs[user],
                              capture_output=True, text=True, timeout=timeout)

    def shell(self, shell_id: int) -> dict:
        reply = httpx.get(f"{self.c.url}/api/v1/shells/{shell_id}", headers=bearer(self.tokens["admin"]))
        return dict(reply.json()["shell"])


def _env_of(c: LocalTestCluster, home: pathlib.Path, user: str, token: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    AuthFile(home / "auth.json").store(c.url, user, token)
    return {**c.env, "STALWART_HOME": str(home)}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("shells")
    with LocalTestCluster(root / "home", master_config=RBAC) as c:
        admin = c.client()
        uncategorized = next(w["id"] for w in admin.get("/workspaces")["workspaces"] if w["name"] == "Uncategorized")
        tokens = {"admin": c.admin_token or ""}
        for user, role in {"alice": "Editor", **OTHERS}.items():
            admin.post("/users", {"username": user, "password": f"{user}-pw-1"})
            if role is not None:
                admin.post("/rbac/assignments", {"role": role, "username": user, "workspaceId": uncategorized})
            with httpx.Client(base_url=c.url) as plain:
                tokens[user] = log_in(plain, user, f"{user}-pw-1")
        envs = {user: _env_of(c, root / f"cli-{user}", user, token) for user, token in tokens.items()}
        yield World(c, envs, tokens)


def _start(w: World, *config: str) -> int:
    args = [a for item in ("resources.slots=0", *config) for a in ("--config", item)]
    made = w.cli("alice", "shell", "start", "-d", *args)
    assert made.returncode == 0, made.stderr
    return int(re.search(r"Launched shell (\d+)", made.stdout).group(1))


def _served(w: World, shell_id: int) -> None:
    w.c.wait_for(lambda: w.shell(shell_id).get("proxy_path"), timeout=120, what=f"shell {shell_id} to listen")


def _ended(w: World, shell_id: int, timeout: float = 60) -> dict:
    return w.c.wait_for(lambda: (s := w.shell(shell_id))["result"] != "ACTIVE" and s, timeout=timeout,
                        what=f"shell {shell_id} to end")


@pytest.fixture(scope="module")
def shell_id(world: World) -> int:
    made = _start(world)
    _served(world, made)
    return made


def test_the_owner_opens_a_shell_through_the_master(world: World, shell_id: int) -> None:
    ran = world.cli("alice", "shell", "open", str(shell_id), "--", "python3", "-c", "print(6*7)")
    assert ran.returncode == 0 and ran.stdout == "42\n", (ran.stdout, ran.stderr)
    where = world.cli("alice", "shell", "open", str(shell_id), "--", "sh", "-c", "pwd; echo $DET_TASK_ID")
    workdir, task_id = where.stdout.split()
    assert task_id == f"shell-{shell_id}" and workdir.endswith("/workdir"), where.stdout
    assert world.cli("alice", "shell", "open", str(shell_id), "--", "sh", "-c", "exit 7").returncode == 7


def test_no_key_or_secret_in_what_others_see(world: World, shell_id: int) -> None:
    key = httpx.get(f"{world.c.url}/api/v1/shells/{shell_id}/key", headers=bearer(world.tokens["alice"])).json()
    secret = key["private_key"].splitlines()[1]
    described = world.cli("alice", "shell", "describe", str(shell_id), "--json").stdout
    config = world.cli("alice", "shell", "config", str(shell_id)).stdout
    task = httpx.get(f"{world.c.url}/api/v1/tasks/shell-{shell_id}", headers=bearer(world.tokens["alice"])).text
    logs = world.cli("alice", "shell", "logs", str(shell_id)).stdout
    assert "ssh-ed25519 " in config and "PRIVATE" not in config
    for seen in (described, config, task, logs):
        assert secret not in seen and "PRIVATE KEY" not in seen
    shown = world.cli("alice", "shell", "show-ssh-command", str(shell_id)).stdout.strip()
    key_file = pathlib.Path(re.search(r"-i (\S+)", shown).group(1))
    assert key_file.stat().st_mode & 0o077 == 0 and "ProxyCommand=" in shown


@pytest.mark.parametrize("caller", [*OTHERS, "admin"])
def test_no_one_but_the_owner_gets_the_key_or_the_tunnel(world: World, shell_id: int, caller: str) -> None:
    headers = bearer(world.tokens[caller])
    key = httpx.get(f"{world.c.url}/api/v1/shells/{shell_id}/key", headers=headers)
    assert key.status_code == 403 and "only alice" in key.text, key.text
    url = world.c.url.replace("http", "ws", 1) + f"/proxy/shell-{shell_id}/"
    with pytest.raises(InvalidStatus) as refused, connect(url, additional_headers=headers, open_timeout=30):
        pass
    assert refused.value.response.status_code == 403
    opened = world.cli(caller, "shell", "open", str(shell_id), "--", "true")
    refusal = "lacks view_tasks" if caller == "bob" else "only alice"  # bob may not even see the shell
    assert opened.returncode != 0 and refusal in opened.stderr, opened.stderr


def _environ_has(pid: str, text: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return text in f.read().split(b"\0")
    except OSError:
        return False


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _cmdline_has(pid: str, text: bytes) -> bool:
    return text in _cmdline(pid)


def _processes_of(allocation_id: str, config_path: str) -> list[int]:
    """The processes of a shell: those naming its sshd config, or whose environment has its allocation id."""
    mark = f"STALWART_ALLOCATION_ID={allocation_id}".encode()
    return [int(pid) for pid in filter(str.isdigit, os.listdir("/proc")) if int(pid) != os.getpid() and (
        _cmdline_has(pid, config_path.encode()) or _environ_has(pid, mark))]


def _sshd_of(shell_id: int) -> tuple[str, str]:
    """(allocation id, sshd config path) of the running shell: the config its sshd was started with (sshd's
    process title hides its environment) names both in its SetEnv line."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        found = re.search(rb"-f[\0 ]([^\0 ]+/shell/sshd_config)", _cmdline(pid))
        if found is None:
            continue
        config = pathlib.Path(found.group(1).decode())
        text = config.read_text() if config.exists() else ""
        allocation = re.search(r'"STALWART_ALLOCATION_ID=([^"]+)"', text)
        if f'"DET_TASK_ID=shell-{shell_id}"' in text and allocation is not None:
            return allocation.group(1), str(config)
    raise AssertionError(f"no sshd of shell {shell_id} runs")


def test_kill_ends_the_shell_and_every_process_of_it(world: World) -> None:
    shell_id = _start(world)
    _served(world, shell_id)
    allocation_id, config_path = _sshd_of(shell_id)
    session = subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", "shell", "open", str(shell_id), "--",
                                "sleep", "300"], env=world.envs["alice"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        world.c.wait_for(lambda: len(_processes_of(allocation_id, config_path)) > 2, timeout=30,
                         what="the session's processes (sshd's children, sleep)")
        killed = world.cli("alice", "shell", "kill", str(shell_id))
        assert killed.returncode == 0, killed.stderr
        assert _ended(world, shell_id)["end_reason"] == "killed by alice"
        world.c.wait_for(lambda: not _processes_of(allocation_id, config_path), timeout=30,
                         what="no process of the killed shell to remain")
        assert session.wait(timeout=30) != 0
    finally:
        session.kill()


def test_an_idle_shell_ends_by_itself_but_not_while_a_session_is_open(world: World) -> None:
    idle = _start(world, "idle_timeout=5s", FAST_PROBE)
    busy = _start(world, "idle_timeout=5s", FAST_PROBE)
    session = world.cli("alice", "shell", "open", str(busy), "--", "sleep", "8", timeout=90)  # waits until served
    assert session.returncode == 0, session.stderr
    assert world.shell(busy)["result"] == "ACTIVE"  # 8 s in a session, past its 5 s idle timeout
    assert "idle" in (_ended(world, idle)["end_reason"] or "")
    assert "idle" in (_ended(world, busy, timeout=30)["end_reason"] or "")
