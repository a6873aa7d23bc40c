"""A workspace's defaults apply to the experiments created in it (issue 20): its checkpoint storage when the
config names none (a config that names one keeps it), and its default compute pool when the config asks for
no pool; a pool bound to another workspace is refused with the reason."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from helpers_auth import as_admin
from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings

CONFIG = """name: defaults
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 1}}
workspace: W
project: P
"""


@pytest.fixture
def admin(tmp_path) -> Iterator[TestClient]:
    cluster = parse_master_config({"resource_pools": [{"pool_name": "default"}, {"pool_name": "gpu"}]})
    app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, cluster=cluster,
                                    ui_metrics_index=False))
    with TestClient(app) as client:
        as_admin(client)
        yield client


def _ok(reply) -> dict:
    assert reply.status_code == 200, reply.text
    return reply.json()


def _context(tmp_path) -> str:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print('hi')\n")
    return base64.b64encode(pack_context(ctx).data).decode()


def test_the_workspace_storage_and_pool_are_the_defaults_of_its_experiments(admin, tmp_path) -> None:
    storage = {"type": "shared_fs", "host_path": str(tmp_path / "w-checkpoints")}
    ws = _ok(admin.post("/api/v1/workspaces", json={"name": "W", "checkpointStorageConfig": storage,
                                                     "defaultComputePool": "gpu"}))["workspace"]
    assert ws["checkpointStorageConfig"] == storage and ws["defaultComputePool"] == "gpu"
    _ok(admin.post(f"/api/v1/workspaces/{ws['id']}/projects", json={"name": "P"}))
    context = _context(tmp_path)

    made = _ok(admin.post("/api/v1/experiments", json={"config": CONFIG, "context": context, "activate": False}))
    exp_id = made["experiment"]["id"]
    detail = _ok(admin.get(f"/api/v1/experiments/{exp_id}"))
    assert detail["config"]["checkpoint_storage"]["host_path"] == storage["host_path"]
    assert (detail["experiment"]["workspace"], detail["experiment"]["project"]) == ("W", "P")
    jobs = _ok(admin.get("/api/v1/jobs"))["jobs"]
    assert {j["entity_id"]: j["resource_pool"] for j in jobs if j["type"] == "EXPERIMENT"}[exp_id] == "gpu"

    own = CONFIG + f"checkpoint_storage: {{type: shared_fs, host_path: {tmp_path / 'mine'}}}\n" \
                   "resources: {resource_pool: default}\n"
    mine = _ok(admin.post("/api/v1/experiments", json={"config": own, "context": context, "activate": False}))
    detail = _ok(admin.get(f"/api/v1/experiments/{mine['experiment']['id']}"))
    assert detail["config"]["checkpoint_storage"]["host_path"] == str(tmp_path / "mine")


def test_a_pool_bound_elsewhere_is_refused_with_the_reason(admin, tmp_path) -> None:
    other = _ok(admin.post("/api/v1/workspaces", json={"name": "Other"}))["workspace"]
    ws = _ok(admin.post("/api/v1/workspaces", json={"name": "W"}))["workspace"]
    _ok(admin.post(f"/api/v1/workspaces/{ws['id']}/projects", json={"name": "P"}))
    _ok(admin.post("/api/v1/resource-pools/gpu/workspace-bindings", json={"workspaceIds": [other["id"]]}))
    refused = admin.post("/api/v1/experiments", json={
        "config": CONFIG + "resources: {resource_pool: gpu}\n", "context": _context(tmp_path), "activate": False})
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert "pool gpu is bound to workspace(s) Other" in message and "workspace W may not use it" in message
    bad = admin.patch(f"/api/v1/workspaces/{ws['id']}", json={"defaultComputePool": "nope"})
    assert bad.status_code == 400 and "'nope' is not a resource pool" in bad.json()["error"]["message"]


def test_a_command_goes_to_the_project_its_config_names(admin, tmp_path) -> None:
    ws = _ok(admin.post("/api/v1/workspaces", json={"name": "W"}))["workspace"]
    project = _ok(admin.post(f"/api/v1/workspaces/{ws['id']}/projects", json={"name": "P"}))["project"]
    made = _ok(admin.post("/api/v1/commands", json={"config": {"entrypoint": ["true"], "workspace": "W",
                                                                  "project": "P"}}))["command"]
    assert made["project_id"] == project["id"]
    plain = _ok(admin.post("/api/v1/commands", json={"config": {"entrypoint": ["true"]}}))["command"]
    assert plain["project_id"] == 1  # Uncategorized
    half = admin.post("/api/v1/commands", json={"config": {"entrypoint": ["true"], "workspace": "W"}})
    assert half.status_code == 400 and "project: required when workspace is set" in half.json()["error"]["message"]
    unknown = admin.post("/api/v1/commands", json={"config": {"entrypoint": ["true"], "workspace": "W",
                                                              "project": "nope"}})
    assert unknown.status_code == 400 and "no project named 'nope'" in unknown.json()["error"]["message"]
