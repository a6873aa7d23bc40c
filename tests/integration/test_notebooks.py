"""Notebooks (issue 32) on a real master and agent (rbac, one agent of 1 slot) running real JupyterLab.

A notebook idle past its `idle_timeout` stops by itself (its end reason says so), frees its slot and leaves no
Jupyter process behind; `notebook kill` ends one as "killed by <user>"; with `kernels_or_terminals` a running kernel
(started through the proxy) keeps one alive past its timeout; bad input gets clear answers; no one but its owner,
not even a ClusterAdmin, opens it through the proxy.

The master's cookies and the caller's `Authorization` never reaching a task's server is the proxy's rule for every
kind alike (proxy/headers.py), tested on a recording server in tests/integration/test_proxy_authz.py and
tests/ui/test_task_proxy_ui.py; here JupyterLab answering the proxy shows that it got the service token instead.
"""

from __future__ import annotations

import os
import pathlib
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

MASTER_CONFIG = "security:\n  authz:\n    type: rbac\n"
PASSWORD = "notebook-pw"
FAST_PROBE = "environment:\n  environment_variables: [STALWART_SERVICE_BUSY_EVERY_S=1]\n"
"""The busy probe asks JupyterLab every second (5 s by default), so a short idle_timeout is not a race."""
KERNEL_TIMEOUT_S = 25


class World:
    """The cluster, the admin's HTTP client, and one client per other caller (Viewer and Editor of workspace
    `nb-team`, where the notebooks go, and a ClusterAdmin)."""

    def __init__(self, c: LocalTestCluster) -> None:
        self.c = c
        self.admin = httpx.Client(base_url=c.url, headers={"Authorization": f"Bearer {c.admin_token}"}, timeout=60)
        ws = _ok(self.admin.post("/api/v1/workspaces", json={"name": "nb-team"}))["workspace"]["id"]
        _ok(self.admin.post(f"/api/v1/workspaces/{ws}/projects", json={"name": "nb-proj"}))
        self.others: dict[str, httpx.Client] = {}
        for role, on in (("Viewer", ws), ("Editor", ws), ("ClusterAdmin", None)):
            name = f"nb-{role.lower()}"
            _ok(self.admin.post("/api/v1/users", json={"username": name, "password": PASSWORD}))
            _ok(self.admin.post("/api/v1/rbac/assignments", json={"role": role, "username": name,
                                                                   **({"workspaceId": on} if on else {})}))
            token = _ok(httpx.post(f"{c.url}/api/v1/auth/login", json={"username": name, "password": PASSWORD,
                                                                       "isHashed": False}))["token"]
            self.others[role] = httpx.Client(base_url=c.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def start(self, config: str, *args: str) -> int:
        """A notebook of `config` (YAML, in workspace nb-team) started by the admin from the CLI; its id."""
        path = self.c.home.parent / f"notebook-{time.monotonic_ns()}.yaml"
        path.write_text("workspace: nb-team\nproject: nb-proj\n" + config)
        made = self.c.cli("notebook", "start", "-d", "--config-file", str(path), *args, check=True)
        return int(re.search(r"Launched notebook (\d+)", made.stdout).group(1))

    def notebook(self, nb_id: int) -> dict[str, Any]:
        return dict(_ok(self.admin.get(f"/api/v1/notebooks/{nb_id}"))["notebook"])

    def served(self, nb_id: int, timeout: float = 120) -> str:
        """The notebook's proxy path once JupyterLab answers there (it must not end first)."""
        deadline = time.monotonic() + timeout
        while (nb := self.notebook(nb_id))["proxy_path"] is None:
            assert nb["result"] == "ACTIVE", f"notebook {nb_id} ended before it served: {nb}"
            assert time.monotonic() < deadline, f"notebook {nb_id} does not serve after {timeout:.0f} s: {nb}"
            time.sleep(0.3)
        return str(nb["proxy_path"])

    def ended(self, nb_id: int, timeout: float = 60) -> dict[str, Any]:
        return self.c.wait_for(lambda: (nb := self.notebook(nb_id))["result"] != "ACTIVE" and nb, timeout=timeout,
                               what=f"notebook {nb_id} to end")


def _ok(reply: httpx.Response) -> Any:
    assert reply.status_code == 200, f"{reply.request.method} {reply.request.url}: {reply.status_code} {reply.text}"
    return reply.json()


def _jupyter_processes(base_url: str) -> list[int]:
    """The processes whose command line names `base_url` (a notebook's JupyterLab and its wrapper)."""
    found = []
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if base_url in cmdline:
            found.append(int(proc.name))
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with LocalTestCluster(tmp_path_factory.mktemp("notebooks") / "home", slots=1, master_config=MASTER_CONFIG) as c:
        w = World(c)
        yield w
        for client in (w.admin, *w.others.values()):
            client.close()


def test_an_idle_notebook_stops_by_itself_frees_its_slot_and_leaves_no_jupyter_behind(world: World) -> None:
    nb_id = world.start("idle_timeout: 5s\nresources: {slots: 1}\n" + FAST_PROBE)
    ended = world.ended(nb_id)
    assert ended["result"] == "CANCELED" and ended["end_reason"] == "idle for more than 5s (its idle_timeout)", ended
    world.c.wait_for(lambda: not _jupyter_processes(f"/proxy/notebook-{nb_id}/"), timeout=30,
                     what="no process of the notebook left")
    other = world.c.cli("cmd", "run", "-d", "--config", "resources.slots=1", "true", check=True)
    cmd_id = re.search(r"Launched command (\d+)", other.stdout).group(1)
    world.c.wait_for(lambda: _ok(world.admin.get(f"/api/v1/commands/{cmd_id}"))["command"]["result"] == "COMPLETED",
                     timeout=60, what="a 1-slot command to run in the freed slot")


def test_a_running_kernel_keeps_a_notebook_alive_and_kill_ends_its_jupyter(world: World) -> None:
    """The idle clock starts with the task (not once JupyterLab answers, which takes 5 to 20 s on a loaded machine),
    so this notebook's timeout leaves it time to serve; the kernel then keeps it alive well past it."""
    started = time.monotonic()
    nb_id = world.start(f"idle_timeout: {KERNEL_TIMEOUT_S}s\nresources: {{slots: 0}}\n" + FAST_PROBE)
    base = world.served(nb_id, timeout=KERNEL_TIMEOUT_S)
    kernel = world.admin.post(f"{base}api/kernels", json={"name": "python3"})
    assert kernel.status_code == 201, kernel.text
    assert _jupyter_processes(f"--ServerApp.base_url={base}")
    time.sleep(max(0.0, started + KERNEL_TIMEOUT_S + 8 - time.monotonic()))  # well past its idle_timeout
    assert world.notebook(nb_id)["result"] == "ACTIVE", world.notebook(nb_id)
    lab = world.admin.get(f"{base}lab")
    assert lab.status_code == 200 and "JupyterLab" in lab.text  # it got the service token: the proxy's, not ours
    assert '"token": ""' in lab.text  # and it never reaches the browser: not in Lab's page, not in an error page
    missing = world.admin.get(f"{base}no-such-page")
    assert missing.status_code == 404 and "data-jupyter-api-token" not in missing.text
    world.c.cli("notebook", "kill", str(nb_id), check=True)
    ended = world.ended(nb_id)
    assert ended["result"] == "CANCELED" and ended["end_reason"] == "killed by admin", ended
    world.c.wait_for(lambda: not _jupyter_processes(base), timeout=30, what="no process of the notebook left")
    again = world.admin.post(f"/api/v1/notebooks/{nb_id}/kill", json={})
    assert again.status_code == 409 and "already CANCELED" in again.text


def test_no_one_but_its_owner_opens_a_notebook_not_even_a_cluster_admin(world: World) -> None:
    nb_id = world.start("resources: {slots: 0}\nidle_timeout: 5m\n")
    try:
        base = world.served(nb_id)
        for role, client in world.others.items():
            for path in ("lab", "api/status", "api/kernels"):
                refused = client.get(f"{base}{path}")
                assert refused.status_code == 403 and "only admin" in refused.text, (role, path, refused.text)
            assert client.post(f"{base}api/kernels", json={"name": "python3"}).status_code == 403, role
            seen = client.get(f"/api/v1/notebooks/{nb_id}")  # viewing the task is another thing: its role's
            assert seen.status_code == 200, (role, seen.text)
        assert world.others["Viewer"].post(f"/api/v1/notebooks/{nb_id}/kill", json={}).status_code == 403
        assert world.admin.get(f"{base}api/status").status_code == 200
    finally:
        world.admin.post(f"/api/v1/notebooks/{nb_id}/kill", json={})


def test_bad_input_gets_clear_answers(world: World) -> None:
    bad_type = world.admin.post("/api/v1/notebooks", json={"config": {"notebook_idle_type": "sometimes"}})
    assert bad_type.status_code == 400 and "notebook_idle_type: 'sometimes' is not one of" in bad_type.text
    bad_timeout = world.admin.post("/api/v1/notebooks", json={"config": "idle_timeout: soon\n"})
    assert bad_timeout.status_code == 400 and "idle_timeout: expected a duration" in bad_timeout.text
    no_template = world.admin.post("/api/v1/notebooks", json={"template": "no-such-template"})
    assert no_template.status_code == 400 and "no template named 'no-such-template'" in no_template.text
    unknown_pool = world.c.cli("notebook", "start", "-d", "--config", "resources.resource_pool=nowhere")
    assert unknown_pool.returncode != 0 and "unknown resource pool 'nowhere'" in unknown_pool.stderr
    assert "Traceback" not in unknown_pool.stderr

    too_big = world.c.cli("notebook", "start", "-d", "--config", "resources.slots=4", check=True)
    big_id = re.search(r"Launched notebook (\d+)", too_big.stdout).group(1)
    assert "4 slots asked, but the largest agent in pool 'default' has 1" in too_big.stderr + too_big.stdout
    world.c.cli("notebook", "kill", big_id, check=True)

    unknown = world.admin.get("/api/v1/notebooks/999999")
    assert unknown.status_code == 404 and "999999" in unknown.text
    cmd = world.c.cli("cmd", "run", "-d", "--config", "resources.slots=0", "true", check=True)
    cmd_id = re.search(r"Launched command (\d+)", cmd.stdout).group(1)
    not_a_notebook = world.admin.get(f"/api/v1/notebooks/{cmd_id}")
    assert not_a_notebook.status_code == 404 and "is a command" in not_a_notebook.text
    assert world.admin.post(f"/api/v1/notebooks/{cmd_id}/kill", json={}).status_code == 404
    missing = world.c.cli("notebook", "describe", "999999")
    assert missing.returncode != 0 and "not found" in missing.stderr and "Traceback" not in missing.stderr
