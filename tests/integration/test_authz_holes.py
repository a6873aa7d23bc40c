"""Regression tests of issue 25's holes 1, 2, 3, 5 and 7, each sending the exact request the issue reported, on the
conformance suite's world (a real master in rbac mode on SQLite; `authz_world`). The other holes have their own
tests: 4 (tests/integration/test_agent_credentials.py), 6, 8 and 11 (the workspace and cluster tests), 9
(test_unauthenticated_bodies.py), 10 (test_login_backoff.py), 12 (test_task_secrets.py, the static files' test).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import authz_world as aw
import httpx
import pytest

from cli_runs import fails
from helpers_auth import bearer, log_in
from stalwart.api import permissions as P

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[aw.World]:
    home = tmp_path_factory.mktemp("holes")
    yield from aw.build(home, f"sqlite:///{home / 'm.db'}")


@pytest.fixture(scope="module")
def viewer_of_w2(world: aw.World) -> httpx.Client:
    """A user who is Viewer of workspace W2 only."""
    aw.ok(world.admin.post("/api/v1/users", json={"username": "w2-viewer", "password": aw.PASSWORD}))
    aw.ok(world.admin.post("/api/v1/rbac/assignments", json={
        "role": "Viewer", "username": "w2-viewer", "workspaceId": world.workspaces["W2"]}))
    with httpx.Client(base_url=world.url) as plain:
        return world.client(log_in(plain, "w2-viewer", aw.PASSWORD))


def _refused(reply: httpx.Response, permission: P.Permission) -> None:
    assert reply.status_code == 403, f"{reply.request.url}: {reply.status_code} {reply.text[:300]}"
    assert permission.name in reply.text


def test_hole_1_another_workspaces_checkpoint(world: aw.World, viewer_of_w2: httpx.Client) -> None:
    uuid = world.values["uuid"]
    _refused(viewer_of_w2.get(f"/api/v1/checkpoints/{uuid}/download"), P.VIEW_EXPERIMENTS)
    _refused(viewer_of_w2.get(f"/api/v1/checkpoints/{uuid}"), P.VIEW_EXPERIMENTS)
    assert world.callers["Viewer"].get(f"/api/v1/checkpoints/{uuid}").status_code == 200


def test_hole_2_the_ui_event_stream(world: aw.World, viewer_of_w2: httpx.Client) -> None:
    exp_id, trial_id = world.values["exp_id"], world.values["trial_id"]
    for query in (f"page=experiment&id={exp_id}", f"page=trial&id={trial_id}"):
        _refused(viewer_of_w2.get(f"/api/v1/ui/events?{query}"), P.VIEW_EXPERIMENTS)
    _refused(viewer_of_w2.get(f"/api/v1/ui/experiments/{exp_id}"), P.VIEW_EXPERIMENTS)


def test_hole_3_commands_and_the_queue_across_workspaces(world: aw.World) -> None:
    nobody = world.callers["no role"]
    cmd_id = world.values["cmd_id"]
    _refused(nobody.get(f"/api/v1/commands/{cmd_id}"), P.VIEW_TASKS)
    _refused(nobody.get(f"/api/v1/tasks/command-{cmd_id}/logs"), P.VIEW_TASKS)
    _refused(nobody.get(f"/api/v1/tasks/command-{cmd_id}"), P.VIEW_TASKS)
    assert aw.SECRET not in nobody.get("/api/v1/tasks", params={"all": "true"}).text
    jobs = aw.ok(nobody.get("/api/v1/jobs"))["jobs"]
    assert jobs and aw.SECRET not in str(jobs)
    queued = [j for j in jobs if j["workspace_id"] == world.workspaces["W"]]
    assert queued and all(j["limited"] and "queue_position" in j and "resource_pool" in j for j in queued)
    assert aw.SECRET in world.callers["Viewer"].get(f"/api/v1/commands/{cmd_id}").text


def _start_order(world: aw.World, allocation_id: str) -> dict:
    actions = aw.ok(httpx.get(f"{world.url}/api/v1/agents/a0/actions", headers=world.agent_headers))
    return next(s for s in actions["start"] if s["allocation_id"] == allocation_id)


def test_hole_5_a_trials_session_mints_no_lasting_token(world: aw.World) -> None:
    """The session in a start order (here of the admin's trial) creates no tokens and no users, and dies with the
    allocation."""
    exp_id = world.new_experiment(activate=True)
    allocation_id, trial_id = aw._live_allocation(world, exp_id)
    order = _start_order(world, allocation_id)
    task = order["env"]["STALWART_USER_TOKEN"]
    assert order["env"]["DET_USER_TOKEN"] == task
    with world.client(task) as as_task:
        assert aw.ok(as_task.get("/api/v1/me"))["user"]["username"] == "admin"
        _refused(as_task.post("/api/v1/tokens", json={"lifespan": 315360000}), P.MANAGE_OWN_TOKENS)
        _refused(as_task.post("/api/v1/users", json={"username": "minted", "password": ""}), P.MANAGE_USERS)
        _refused(as_task.post("/api/v1/rbac/assignments", json={"role": "ClusterAdmin", "username": "tess"}),
                 P.ASSIGN_ROLES)
        _refused(as_task.post("/api/v1/users/admin/password", json={"password": "x"}), P.EDIT_OWN_ACCOUNT)
        assert as_task.get(f"/api/v1/experiments/{exp_id}").status_code == 200  # the owner's reads stay
        aw.ok(world.admin.post(f"/api/v1/trials/{trial_id}/kill", json={}))
        aw.ok(httpx.post(f"{world.url}/api/v1/allocations/{allocation_id}/exited", headers=world.agent_headers,
                         json={"agent_id": "a0", "exit_code": -15}))
        assert as_task.get("/api/v1/me").status_code == 401


def test_hole_7_an_allocation_reads_only_its_own_experiment_while_it_lives(world: aw.World) -> None:
    best = "/api/v1/experiments/{}/searcher/best_searcher_validation_metric"
    own = world.values["exp_id"]
    other = aw.ok(world.admin.get(f"/api/v1/trials/{world.trials['E2']}"))["trial"]["experiment_id"]
    ended = aw.ok(world.admin.get(f"/api/v1/trials/{world.trials['E3']}"))["trial"]["experiment_id"]
    e_token = world.allocation_token("E")
    assert httpx.get(world.url + best.format(own), headers=e_token).status_code == 404  # its own: no validation yet
    for exp_id, token in ((other, e_token), (own, world.allocation_token("E2")),
                          (ended, world.allocation_token("E3"))):
        reply = httpx.get(world.url + best.format(exp_id), headers=token)
        assert reply.status_code == 403, reply.text
    # a user's session still reads it with view_experiments
    assert world.callers["Viewer"].get(best.format(own)).status_code == 404
    _refused(world.callers["no role"].get(best.format(own)), P.VIEW_EXPERIMENTS)


def test_a_users_session_is_not_an_agents_credential(world: aw.World) -> None:
    reply = httpx.get(f"{world.url}/api/v1/agents/a0/actions", headers=bearer(world.admin.headers["authorization"]
                                                                             .split(" ", 1)[1]))
    assert reply.status_code in (401, 403)


def test_a_role_taken_away_ends_an_open_event_stream(world: aw.World) -> None:
    """Hole 2's stream stays open: a role taken away while it is open ends it, as it refuses the next call."""
    assignment = {"role": "Viewer", "username": "watcher", "workspaceId": world.workspaces["W"]}
    aw.ok(world.admin.post("/api/v1/users", json={"username": "watcher", "password": aw.PASSWORD}))
    aw.ok(world.admin.post("/api/v1/rbac/assignments", json=assignment))
    with httpx.Client(base_url=world.url) as plain:
        watcher = world.client(log_in(plain, "watcher", aw.PASSWORD))
    events = []
    query = {"page": "experiment", "id": world.values["exp_id"], "interval": "0.2"}
    with watcher, watcher.stream("GET", "/api/v1/ui/events", params=query, timeout=30) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            if line.startswith("event:"):
                events.append(line.split(":", 1)[1].strip())
                if events == ["model"]:
                    aw.ok(world.admin.post("/api/v1/rbac/unassignments", json=assignment))
            if line.startswith("data:") and events[-1:] == ["failure"]:
                assert P.VIEW_EXPERIMENTS.name in line
                break
    assert events[0] == "model" and events[-1] == "failure", events


# -- issue 26: refusals that send people the right way ----------------------------------------------------------
def test_a_refusal_names_the_roles_and_the_workspace_that_would_allow_it(world: aw.World) -> None:
    """A Viewer of W creating an experiment in W is told which roles on W (or on the cluster) would allow it."""
    config = aw.EXPERIMENT.format(name="viewer-tries", workspace="team-w", project="proj-" + aw.SECRET)
    reply = world.callers["Viewer"].post("/api/v1/experiments", json={"config": config, "context": world.context})
    assert reply.status_code == 403, reply.text
    message = reply.json()["error"]["message"]
    assert "Editor, EditorRestricted or WorkspaceAdmin on workspace team-w" in message, message
    assert "ClusterAdmin on the whole cluster" in message and "create_experiments" in message, message


def test_cmd_logs_and_cmd_kill_of_a_missing_command_say_the_same_noun(world: aw.World) -> None:
    env = {**os.environ, "STALWART_MASTER": world.url,
           "STALWART_USER_TOKEN": world.admin.headers["authorization"].split(" ", 1)[1]}
    said = [fails(env, 3, "cmd", verb, "999999").strip() for verb in ("logs", "kill")]
    assert all("command 999999 not found" in line for line in said), said
