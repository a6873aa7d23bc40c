"""TensorBoards (issue 32) on a real master and agent in rbac mode: `stalwart tensorboard start` over finished
experiments, reached through the master's proxy.

Experiments E1 and E2 are in Uncategorized, E3 in workspace `hidden`; carol is an Editor of Uncategorized only, so
she may view E1 and E2 but not E3. A TensorBoard serves the trials' event files (brought from checkpoint storage) as
runs named `exp-<id>/trial-<id>`, keeps bringing new ones, refuses whoever may not view all it shows, ends when
killed (its server with it) or when idle past its idle_timeout.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import httpx
import pytest

from helpers_auth import bearer, log_in
from stalwart.harness.tensorboard import ScalarWriter
from stalwart.testing import LocalTestCluster
from tensorboard_runs import CONFIG, context_b64, event_dir, finished_experiments

pytestmark = pytest.mark.integration

RBAC = "security:\n  authz:\n    type: rbac\n"
PASSWORD = "carol-pw-1"


class World:
    def __init__(self, c: LocalTestCluster, runs: list[tuple[int, int]], carol: dict[str, str]) -> None:
        self.c, self.runs, self.carol = c, runs, carol
        self.admin = bearer(c.admin_token or "")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with LocalTestCluster(tmp_path_factory.mktemp("tensorboards") / "home", master_config=RBAC) as c:
        admin = c.client()
        hidden = admin.post("/workspaces", {"name": "hidden"})["workspace"]["id"]
        admin.post(f"/workspaces/{hidden}/projects", {"name": "p"})
        runs = finished_experiments(c, 2)
        hidden_exp = CONFIG.format(name="tb-hidden") + "workspace: hidden\nproject: p\n"  # never runs
        made = admin.post("/experiments", {"config": hidden_exp, "context": context_b64(), "activate": False})
        runs.append((int(made["experiment"]["id"]), 0))
        admin.post("/users", {"username": "carol", "password": PASSWORD})
        uncategorized = next(w["id"] for w in admin.get("/workspaces")["workspaces"] if w["name"] == "Uncategorized")
        admin.post("/rbac/assignments", {"role": "Editor", "username": "carol", "workspaceId": uncategorized})
        with httpx.Client(base_url=c.url) as plain:
            carol = bearer(log_in(plain, "carol", PASSWORD))
        yield World(c, runs, carol)


def _start(w: World, *ids: int, config: str | None = None) -> int:
    extra = ["--config", config] if config else []
    made = w.c.cli("tensorboard", "start", "-d", *[str(i) for i in ids], *extra, check=True)
    return int(re.search(r"Launched TensorBoard (\d+)", made.stdout).group(1))


def _tb(w: World, tb_id: int) -> dict:
    return httpx.get(f"{w.c.url}/api/v1/tensorboards/{tb_id}", headers=w.admin).json()["tensorboard"]


def _served(w: World, tb_id: int) -> str:
    return w.c.wait_for(lambda: _tb(w, tb_id).get("proxy_path"), timeout=120, what=f"TensorBoard {tb_id} to serve")


def _runs(w: World, tb_id: int) -> list[str]:
    reply = httpx.get(f"{w.c.url}/proxy/tensorboard-{tb_id}/data/runs", headers=w.admin, timeout=30)
    assert reply.status_code == 200, reply.text
    return sorted(reply.json())


def _processes_naming(text: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_an_unknown_experiment_is_a_clear_404_from_the_cli(world: World) -> None:
    out = world.c.cli("tensorboard", "start", "-d", "99999")
    assert out.returncode != 0 and "experiment 99999 not found" in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


@pytest.mark.parametrize("given", ["environment.image=evil/image:1",
                                   "environment.environment_variables=[PYTHONPATH=/x]",
                                   "bind_mounts=[{host_path: /, container_path: /host}]"])
def test_a_tensorboard_runs_no_code_of_its_starter(world: World, given: str) -> None:
    exp_id = world.runs[0][0]
    out = world.c.cli("tensorboard", "start", "-d", str(exp_id), "--config", given)
    key = given.partition("=")[0]
    assert out.returncode != 0 and f"{key}: a TensorBoard takes no" in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def test_it_serves_both_experiments_runs_and_brings_new_event_files(world: World) -> None:
    (e1, t1), (e2, t2), _ = world.runs
    tb_id = _start(world, e1, e2)
    try:
        assert _served(world, tb_id) == f"/proxy/tensorboard-{tb_id}/"
        described = _tb(world, tb_id)
        assert described["kind"] == "tensorboard" and described["config"]["resources"]["slots"] == 0
        assert described["config"]["tensorboard"] == {"experiment_ids": [e1, e2], "trial_ids": []}
        assert "checkpoint_storage" not in described["config"]
        expected = [f"exp-{e1}/trial-{t1}", f"exp-{e2}/trial-{t2}"]
        world.c.wait_for(lambda: _runs(world, tb_id) == expected or None, timeout=60, what="both runs")

        writer = ScalarWriter(event_dir(world.c, e1, t1) / "late")  # written after the start: synced in
        writer.add_scalars(1, {"late_loss": 0.5})
        writer.close()
        world.c.wait_for(lambda: f"exp-{e1}/trial-{t1}/late" in _runs(world, tb_id) or None, timeout=60,
                         what="the new event file to be synced")
        listed = world.c.cli("tb", "list", check=True).stdout
        assert str(tb_id) in listed
    finally:
        world.c.cli("tensorboard", "kill", str(tb_id))


def test_who_may_not_view_every_experiment_is_refused_on_start_and_at_the_proxy(world: World) -> None:
    (e1, _), _, (e3, _) = world.runs
    refused = httpx.post(f"{world.c.url}/api/v1/tensorboards", headers=world.carol,
                         json={"experiment_ids": [e1, e3]})
    assert refused.status_code == 403, refused.text
    assert "view_experiments" in refused.text
    tb_id = _start(world, e1, e3)
    try:
        c = world.c
        c.wait_for(lambda: _tb(world, tb_id).get("proxy_path") or _tb(world, tb_id)["result"] != "ACTIVE" or None,
                   timeout=120, what="the TensorBoard to start")
        reply = httpx.get(f"{c.url}/proxy/tensorboard-{tb_id}/data/runs", headers=world.carol)
        assert reply.status_code == 403, reply.text
        mine = httpx.post(f"{c.url}/api/v1/tensorboards", headers=world.carol, json={"experiment_ids": [e1]})
        assert mine.status_code == 200, mine.text
        carol_tb = mine.json()["tensorboard"]["id"]
        _served(world, carol_tb)
        assert httpx.get(f"{c.url}/proxy/tensorboard-{carol_tb}/data/runs", headers=world.carol).status_code == 200
        httpx.post(f"{c.url}/api/v1/tensorboards/{carol_tb}/kill", headers=world.carol, json={})
    finally:
        world.c.cli("tensorboard", "kill", str(tb_id))


def test_kill_ends_it_with_its_server(world: World) -> None:
    _, (e2, t2), _ = world.runs
    made = world.c.cli("tensorboard", "start", "--no-browser", "-t", str(t2), check=True)  # waits until it serves
    tb_id = int(re.search(r"Launched TensorBoard (\d+)", made.stdout).group(1))
    assert f"{world.c.url}/proxy/tensorboard-{tb_id}/" in made.stdout
    assert _tb(world, tb_id)["config"]["tensorboard"] == {"experiment_ids": [e2], "trial_ids": [t2]}
    world.c.wait_for(lambda: _runs(world, tb_id) == [f"exp-{e2}/trial-{t2}"] or None, timeout=60, what="its run")
    prefix = f"/proxy/tensorboard-{tb_id}"
    assert _processes_naming(prefix), "no TensorBoard process names its base path"
    world.c.cli("tensorboard", "kill", str(tb_id), check=True)
    ended = world.c.wait_for(lambda: (d := _tb(world, tb_id))["result"] != "ACTIVE" and d, timeout=60,
                             what="the TensorBoard to end")
    assert ended["end_reason"] == "killed by admin"
    world.c.wait_for(lambda: not _processes_naming(prefix) or None, timeout=30, what="its processes to end")


def test_an_idle_tensorboard_ends_by_itself(world: World) -> None:
    (e1, _), _, _ = world.runs
    tb_id = _start(world, e1, config="idle_timeout=5s")
    _served(world, tb_id)
    ended = world.c.wait_for(lambda: (d := _tb(world, tb_id))["result"] != "ACTIVE" and d, timeout=90,
                             what="the idle TensorBoard to end")
    assert "idle" in (ended["end_reason"] or ""), ended
