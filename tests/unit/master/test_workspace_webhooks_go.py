"""Deleting a workspace deletes its webhooks (and their deliveries) with it, on an in-process master.

A workspace's webhook names its workspace by a foreign key; without this the delete would break the key (a 500 on
PostgreSQL) or leave webhooks that fire for nothing. The cluster's webhooks and other workspaces' stay.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from helpers_auth import as_admin
from stalwart.config.master import parse_master_config
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings

HOOK = {"url": "http://127.0.0.1:9/hook", "triggers": [{"trigger_type": "EXPERIMENT_STATE_CHANGE",
                                                     "condition": {"state": "COMPLETED"}}]}


@pytest.fixture
def admin(tmp_path) -> Iterator[TestClient]:
    app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path,
                                    cluster=parse_master_config({}), ui_metrics_index=False))
    client = TestClient(app)  # no `with`: no background loops; nothing is delivered
    as_admin(client)
    yield client
    client.close()


def _ok(reply) -> dict:
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_deleting_a_workspace_deletes_its_webhooks_and_keeps_the_others(admin: TestClient) -> None:
    doomed = _ok(admin.post("/api/v1/workspaces", json={"name": "doomed"}))["workspace"]["id"]
    kept = _ok(admin.post("/api/v1/workspaces", json={"name": "kept"}))["workspace"]["id"]
    _ok(admin.post("/api/v1/webhooks", json={**HOOK, "workspace_id": doomed, "name": "doomed-hook"}))
    _ok(admin.post("/api/v1/webhooks", json={**HOOK, "workspace_id": kept, "name": "kept-hook"}))
    _ok(admin.post("/api/v1/webhooks", json={**HOOK, "name": "cluster-hook"}))
    _ok(admin.delete(f"/api/v1/workspaces/{doomed}"))
    names = sorted(w["name"] for w in _ok(admin.get("/api/v1/webhooks"))["webhooks"])
    assert names == ["cluster-hook", "kept-hook"]
