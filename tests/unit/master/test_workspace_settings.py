"""A workspace's settings are checked when they are given (issue 25, holes 6 and 11), on an in-process master.

- Hole 11: `PATCH /api/v1/workspaces/1 {"checkpointStorageConfig": {"foo": 1}}` answered 200 and broke every later
  experiment of Uncategorized. Uncategorized's settings cannot change (409, as Determined's), and a workspace's
  storage is validated as an experiment's `checkpoint_storage` is (400 naming the field), on create and PATCH.
- Hole 6: a user holding only WorkspaceCreator created a workspace whose tasks run as root. Naming a workspace's
  OS user needs `set_agent_user` (admins); uid 0 or gid 0 is refused unless the master config allows root tasks
  (`security.allow_root_tasks`, or a pool's `allow_root_tasks`); a creator administers what it creates
  (WorkspaceAdmin on it, as Determined's `workspace_creator_assign_role`), and the config can turn that off.
- Hole 8's master side: in basic mode `rbac assign-role` is refused (409, saying how to turn RBAC on), and a master
  refuses to start in basic mode by default while role assignments exist (explicit basic starts).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from helpers_auth import as_admin, as_user
from stalwart.api.errors import ConfigError
from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings

ROOT = {"agentUid": 0, "agentGid": 0, "agentUser": "root", "agentGroup": "root"}
ANN = {"agentUid": 1001, "agentGid": 1001, "agentUser": "ann", "agentGroup": "ann"}
RBAC = {"security": {"authz": {"type": "rbac"}}}

Master = Callable[..., TestClient]


@pytest.fixture
def master(tmp_path) -> Iterator[Master]:
    """Start an in-process master on one database with a master config (a mapping); the admin's client."""
    opened: list[TestClient] = []

    def start(config: dict[str, Any] | None = None) -> TestClient:
        app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path,
                                        cluster=parse_master_config(config or {}), ui_metrics_index=False))
        client = TestClient(app)  # no `with`: the background scheduler stays off; nothing needs to run
        opened.append(client)
        as_admin(client)
        return client

    yield start
    for client in opened:
        client.close()


def _ok(reply) -> dict:
    assert reply.status_code == 200, reply.text
    return reply.json()


def _refused(reply, status: int, *words: str) -> str:
    assert reply.status_code == status, reply.text
    message: str = reply.json()["error"]["message"]
    for word in words:
        assert word in message, message
    return message


def _user(admin: TestClient, name: str, role: str | None = None) -> TestClient:
    """A new user (with `role` on the whole cluster) and a client logged in as it."""
    _ok(admin.post("/api/v1/users", json={"username": name, "password": "pw"}))
    if role is not None:
        _ok(admin.post("/api/v1/rbac/assignments", json={"role": role, "username": name}))
    client = TestClient(admin.app)
    as_user(client, name, "pw")
    return client


# -- hole 11: storage defaults, and Uncategorized --------------------------------------------------------------
def test_uncategorized_settings_cannot_change(master: Master) -> None:
    admin = master()
    _refused(admin.patch("/api/v1/workspaces/1", json={"checkpointStorageConfig": {"foo": 1}}), 409,
             "Uncategorized", "cannot be changed")
    _refused(admin.patch("/api/v1/workspaces/1", json={"checkpointStorageConfig": {
        "type": "shared_fs", "host_path": "/mnt/ok"}}), 409, "default workspace")
    _refused(admin.patch("/api/v1/workspaces/1", json={"name": "Mine"}), 409, "Uncategorized")
    _refused(admin.patch("/api/v1/workspaces/1", json={"defaultComputePool": "default"}), 409, "Uncategorized")
    ws = _ok(admin.get("/api/v1/workspaces/1"))["workspace"]
    assert (ws["name"], ws["checkpointStorageConfig"], ws["defaultComputePool"]) == ("Uncategorized", None, None)
    assert _ok(admin.patch("/api/v1/workspaces/1", json={}))["workspace"]["name"] == "Uncategorized"  # no change


@pytest.mark.parametrize("storage, field, problem", [
    ({"foo": 1}, "checkpointStorageConfig.type", "required"),
    ({"type": "nfs"}, "checkpointStorageConfig.type", "expected one of shared_fs"),
    ({"type": "shared_fs"}, "checkpointStorageConfig.host_path", "required"),
    ({"type": "shared_fs", "host_path": "relative/dir"}, "checkpointStorageConfig.host_path", "absolute path"),
    ({"type": "s3", "bucket": "b", "colour": "red"}, "checkpointStorageConfig.colour", "unknown key"),
    ({"type": "shared_fs", "host_path": "/mnt", "save_trial_best": -1}, "checkpointStorageConfig.save_trial_best",
     "expected an integer >= 0"),
])
def test_a_bad_storage_default_is_refused_naming_the_field(master: Master, storage, field, problem) -> None:
    admin = master()
    _refused(admin.post("/api/v1/workspaces", json={"name": "W", "checkpointStorageConfig": storage}), 400,
             field, problem)
    assert _ok(admin.get("/api/v1/workspaces", params={"name": "W"}))["workspaces"] == []  # nothing was made
    ws = _ok(admin.post("/api/v1/workspaces", json={"name": "W"}))["workspace"]
    _refused(admin.patch(f"/api/v1/workspaces/{ws['id']}", json={"checkpointStorageConfig": storage}), 400,
             field, problem)
    assert _ok(admin.get(f"/api/v1/workspaces/{ws['id']}"))["workspace"]["checkpointStorageConfig"] is None


def test_a_good_storage_default_is_kept_and_its_experiments_are_created(master: Master, tmp_path) -> None:
    admin = master()
    storage = {"type": "shared_fs", "host_path": str(tmp_path / "ckpt"), "save_trial_best": 2}
    ws = _ok(admin.post("/api/v1/workspaces", json={"name": "W"}))["workspace"]
    patched = _ok(admin.patch(f"/api/v1/workspaces/{ws['id']}", json={"checkpointStorageConfig": storage}))
    assert patched["workspace"]["checkpointStorageConfig"] == storage
    _ok(admin.post(f"/api/v1/workspaces/{ws['id']}/projects", json={"name": "P"}))
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('hi')\n")
    config = ("name: x\nentrypoint: python3 train.py\nworkspace: W\nproject: P\n"
              "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n")
    made = _ok(admin.post("/api/v1/experiments", json={
        "config": config, "context": base64.b64encode(pack_context(ctx).data).decode(), "activate": False}))
    detail = _ok(admin.get(f"/api/v1/experiments/{made['experiment']['id']}"))
    assert detail["config"]["checkpoint_storage"]["host_path"] == storage["host_path"]
    cleared = _ok(admin.patch(f"/api/v1/workspaces/{ws['id']}", json={"checkpointStorageConfig": None}))
    assert cleared["workspace"]["checkpointStorageConfig"] is None


# -- hole 6: who may name the OS user, and never root by default -------------------------------------------------
def test_a_workspace_creator_may_not_choose_the_os_user(master: Master) -> None:
    admin = master(RBAC)
    creator = _user(admin, "wc", "WorkspaceCreator")
    _refused(creator.post("/api/v1/workspaces", json={"name": "w", "agentUserGroup": ROOT}), 403,
             "set_agent_user")
    _refused(creator.post("/api/v1/workspaces", json={"name": "w", "agentUserGroup": ANN}), 403, "set_agent_user")
    ws = _ok(creator.post("/api/v1/workspaces", json={"name": "w"}))["workspace"]
    assert ws["agentUserGroup"] is None
    _refused(creator.patch(f"/api/v1/workspaces/{ws['id']}", json={"agentUserGroup": ANN}), 403, "set_agent_user")
    _refused(creator.post("/api/v1/users/wc/agent-user", json=ANN), 403, "set_agent_user")
    assert _ok(admin.get(f"/api/v1/workspaces/{ws['id']}"))["workspace"]["agentUserGroup"] is None


def test_in_basic_mode_only_admins_name_the_os_user(master: Master) -> None:
    admin = master()
    ann = _user(admin, "ann")
    _refused(ann.post("/api/v1/workspaces", json={"name": "w", "agentUserGroup": ANN}), 403, "set_agent_user",
             "only admins")
    _refused(ann.post("/api/v1/users/ann/agent-user", json=ANN), 403, "set_agent_user")
    _refused(ann.delete("/api/v1/users/ann/agent-user"), 403, "set_agent_user")
    ws = _ok(admin.post("/api/v1/workspaces", json={"name": "w", "agentUserGroup": ANN}))["workspace"]
    assert ws["agentUserGroup"] == ANN
    assert _ok(admin.post("/api/v1/users/ann/agent-user", json=ANN))["user"]["agentUserGroup"] == ANN


@pytest.mark.parametrize("link", [ROOT, {**ANN, "agentUid": 0}, {**ANN, "agentGid": 0}])
def test_root_links_are_refused_unless_the_master_allows_root_tasks(master: Master, link) -> None:
    admin = master()
    which = "agentUid 0" if link["agentUid"] == 0 else "agentGid 0"
    _refused(admin.post("/api/v1/workspaces", json={"name": "w", "agentUserGroup": link}), 400,
             "agentUserGroup", which, "security.allow_root_tasks")
    ws = _ok(admin.post("/api/v1/workspaces", json={"name": "w"}))["workspace"]
    _refused(admin.patch(f"/api/v1/workspaces/{ws['id']}", json={"agentUserGroup": link}), 400, which)
    _refused(admin.post("/api/v1/users/admin/agent-user", json=link), 400, which, "allow_root_tasks")
    assert _ok(admin.get("/api/v1/users/admin"))["user"]["agentUserGroup"] is None


@pytest.mark.parametrize("config", [
    {"security": {"allow_root_tasks": True}},
    {"resource_pools": [{"pool_name": "default"}, {"pool_name": "trusted", "allow_root_tasks": True}]},
])
def test_root_links_are_accepted_where_the_config_allows_them(master: Master, config) -> None:
    admin = master(config)
    ws = _ok(admin.post("/api/v1/workspaces", json={"name": "w", "agentUserGroup": ROOT}))["workspace"]
    assert ws["agentUserGroup"] == ROOT
    assert _ok(admin.post("/api/v1/users/admin/agent-user", json=ROOT))["user"]["agentUserGroup"] == ROOT


def test_a_pool_may_forbid_what_the_cluster_allows() -> None:
    cfg = parse_master_config({"security": {"allow_root_tasks": True}, "resource_pools": [
        {"pool_name": "default"}, {"pool_name": "shared", "allow_root_tasks": False}]})
    assert cfg.root_tasks_allowed("default") and not cfg.root_tasks_allowed("shared") and cfg.root_tasks_allowed()
    assert not parse_master_config({}).root_tasks_allowed()


# -- the creator administers what it creates -----------------------------------------------------------------------
def test_a_creator_administers_the_workspace_it_creates(master: Master) -> None:
    admin = master(RBAC)
    creator = _user(admin, "wc", "WorkspaceCreator")
    ws = _ok(creator.post("/api/v1/workspaces", json={"name": "mine"}))["workspace"]
    other = _ok(admin.post("/api/v1/workspaces", json={"name": "theirs"}))["workspace"]
    assert _ok(creator.patch(f"/api/v1/workspaces/{ws['id']}", json={"name": "mine2"}))["workspace"]["name"] == "mine2"
    assert [p["name"] for p in _ok(creator.get(f"/api/v1/workspaces/{ws['id']}/projects"))["projects"]] == [
        "Uncategorized"]
    _ok(creator.post(f"/api/v1/workspaces/{ws['id']}/projects", json={"name": "P"}))
    held = _ok(admin.get("/api/v1/rbac/assignments", params={"username": "wc"}))["assignments"]
    assert sorted((a["role"], a["workspaceName"]) for a in held) == [("WorkspaceAdmin", "mine2"),
                                                                     ("WorkspaceCreator", None)]
    _refused(creator.patch(f"/api/v1/workspaces/{other['id']}", json={"name": "x"}), 403, "edit_workspaces")
    _refused(creator.get(f"/api/v1/workspaces/{other['id']}/projects"), 403, "view_workspaces")


def test_the_config_chooses_the_creators_role_or_none(master: Master) -> None:
    admin = master({"security": {"authz": {"type": "rbac", "workspace_creator_assign_role": {"role_id": 4}}}})
    viewer = _user(admin, "wc", "WorkspaceCreator")
    ws = _ok(viewer.post("/api/v1/workspaces", json={"name": "mine"}))["workspace"]
    assert _ok(viewer.get(f"/api/v1/workspaces/{ws['id']}/projects"))["projects"]
    _refused(viewer.patch(f"/api/v1/workspaces/{ws['id']}", json={"name": "x"}), 403, "edit_workspaces")
    with pytest.raises(ConfigError, match="role_id: expected one of the role ids 2 .WorkspaceAdmin."):
        parse_master_config({"security": {"authz": {"workspace_creator_assign_role": {"role_id": 1}}}})


def test_no_role_when_the_config_turns_it_off(master: Master) -> None:
    admin = master({"security": {"authz": {"type": "rbac", "workspace_creator_assign_role": {"enabled": False}}}})
    creator = _user(admin, "wc", "WorkspaceCreator")
    ws = _ok(creator.post("/api/v1/workspaces", json={"name": "mine"}))["workspace"]
    _refused(creator.patch(f"/api/v1/workspaces/{ws['id']}", json={"name": "x"}), 403, "edit_workspaces")
    assert [a["role"] for a in _ok(admin.get("/api/v1/rbac/assignments", params={"username": "wc"}))[
        "assignments"]] == ["WorkspaceCreator"]


# -- hole 8, the master's side -------------------------------------------------------------------------------------
def test_assigning_a_role_in_basic_mode_is_refused_saying_how_to_turn_rbac_on(master: Master) -> None:
    admin = master()
    _ok(admin.post("/api/v1/users", json={"username": "ann", "password": "pw"}))
    _refused(admin.post("/api/v1/rbac/assignments", json={"role": "Viewer", "username": "ann", "workspaceId": 1}),
             409, "basic mode", "roles have no effect", "type: rbac")
    assert _ok(admin.get("/api/v1/rbac/assignments"))["assignments"] == []
    created = _ok(admin.post("/api/v1/workspaces", json={"name": "w"}))["workspace"]
    assert created["createdBy"] == "admin"
    assert _ok(admin.get("/api/v1/rbac/assignments"))["assignments"] == []  # no creator role in basic mode


def test_a_master_does_not_fall_back_to_basic_mode_while_roles_are_assigned(master: Master) -> None:
    admin = master(RBAC)
    _ok(admin.post("/api/v1/users", json={"username": "ann", "password": "pw"}))
    _ok(admin.post("/api/v1/rbac/assignments", json={"role": "Viewer", "username": "ann", "workspaceId": 1}))
    for default_basic in ({}, {"security": {"authz": {"rbac_ui_enabled": False}}}):
        with pytest.raises(ConfigError) as refused:
            master(default_basic)
        message = str(refused.value)
        assert "refusing to start in basic mode" in message and "1 role assignment" in message
        assert "security.authz.type: basic explicitly" in message and "stalwart up --config" in message
    explicit = master({"security": {"authz": {"type": "basic"}}})
    assert _ok(explicit.get("/api/v1/rbac/my-permissions"))["mode"] == "basic"
    assert _ok(master(RBAC).get("/api/v1/rbac/my-permissions"))["mode"] == "rbac"


def test_unassigning_works_in_basic_mode(master: Master) -> None:
    admin = master(RBAC)
    _ok(admin.post("/api/v1/users", json={"username": "ann", "password": "pw"}))
    _ok(admin.post("/api/v1/rbac/assignments", json={"role": "Viewer", "username": "ann", "workspaceId": 1}))
    basic = master({"security": {"authz": {"type": "basic"}}})
    _ok(basic.post("/api/v1/rbac/unassignments", json={"role": "Viewer", "username": "ann", "workspaceId": 1}))
    assert _ok(master().get("/api/v1/rbac/assignments"))["assignments"] == []  # and the default starts again
