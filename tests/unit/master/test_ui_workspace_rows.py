"""The web UI's workspace and project rows are the API's (issue 27): the workspaces list, a workspace's page and a
project's header show the rows `workspaces.spaces` builds for GET /api/v1/workspaces, /workspaces/{id},
/workspaces/{id}/projects and /projects/{id}, with the same values, and their pages render those values."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from helpers_auth import as_admin
from stalwart.api.models.workspaces import Project, Workspace
from stalwart.context import pack_context
from stalwart.master.app import create_app
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.master.ui import workspace_models


@pytest.fixture
def admin(tmp_path) -> Iterator[TestClient]:
    app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, ui_metrics_index=False))
    with TestClient(app) as client:
        as_admin(client)
        yield client


def _ok(reply: Any) -> Any:
    assert reply.status_code == 200, reply.text
    return reply.json()


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _world(admin: TestClient, tmp_path) -> dict[str, int]:
    """Workspaces `alpha` (two projects, one experiment in `zeta`) and `Beta` (archived), with their ids."""
    ids: dict[str, int] = {}
    for name in ("alpha", "Beta"):
        ids[name] = _ok(admin.post("/api/v1/workspaces", json={"name": name}))["workspace"]["id"]
    for name in ("zeta", "Eta"):
        ids[name] = _ok(admin.post(f"/api/v1/workspaces/{ids['alpha']}/projects",
                                   json={"name": name, "description": f"the {name} runs"}))["project"]["id"]
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('never runs')\n")
    config = ("name: e\nentrypoint: python3 train.py\nworkspace: alpha\nproject: zeta\n"
              "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n")
    _ok(admin.post("/api/v1/experiments", json={"config": config, "activate": False,
                                                "context": base64.b64encode(pack_context(ctx).data).decode()}))
    _ok(admin.post(f"/api/v1/workspaces/{ids['Beta']}/archive"))
    return ids


def test_the_ui_shows_the_apis_workspace_and_project_rows(admin: TestClient, tmp_path) -> None:
    ids = _world(admin, tmp_path)
    m: Master = admin.app.state.master  # type: ignore[attr-defined]  # the app create_app made
    everyone = workspace_models.workspaces_page(m, lambda _ws: True, archived=True)["workspaces"]
    api = {w["id"]: w for w in _ok(admin.get("/api/v1/workspaces"))["workspaces"]}
    assert [w["name"] for w in everyone] == ["alpha", "Beta", "Uncategorized"]  # by name, in any case
    for row in everyone:
        assert _as_json(row) == api[row["id"]]
        Workspace.model_validate(row)
    shown = workspace_models.workspaces_page(m, lambda _ws: True)["workspaces"]
    assert [w["name"] for w in shown] == ["alpha", "Uncategorized"]  # not the archived one unless asked

    page = workspace_models.workspace_page(m, lambda _ws: True, ids["alpha"])
    assert _as_json(page["workspace"]) == _ok(admin.get(f"/api/v1/workspaces/{ids['alpha']}"))["workspace"]
    assert (page["workspace"]["numProjects"], page["workspace"]["numExperiments"]) == (3, 1)
    api_projects = {p["id"]: p for p in _ok(admin.get(f"/api/v1/workspaces/{ids['alpha']}/projects"))["projects"]}
    assert [p["name"] for p in page["projects"]] == ["Eta", "Uncategorized", "zeta"]
    for row in page["projects"]:
        assert _as_json(row) == api_projects[row["id"]]
        Project.model_validate(row)

    head = workspace_models.project_head(m, lambda _ws: True, ids["zeta"])
    assert head.pop("workspaceArchived") is False
    assert _as_json(head) == _ok(admin.get(f"/api/v1/projects/{ids['zeta']}"))["project"]
    assert head["numExperiments"] == 1


def test_the_workspace_pages_render_the_api_rows(admin: TestClient, tmp_path) -> None:
    ids = _world(admin, tmp_path)
    html = admin.get("/workspaces?archived=true", headers={"accept": "text/html"})
    assert html.status_code == 200, html.text
    row = html.text.split(f'<tr data-key="{ids["alpha"]}">', 1)[1].split("</tr>", 1)[0]
    assert '<td class="num">3</td><td class="num">1</td>' in row and "<td>admin</td>" in row
    html = admin.get(f"/workspaces/{ids['alpha']}", headers={"accept": "text/html"})
    assert html.status_code == 200, html.text
    assert "3 projects,\n1 experiment; created by admin." in html.text
    row = html.text.split(f'<tr data-key="{ids["zeta"]}">', 1)[1].split("</tr>", 1)[0]
    assert "the zeta runs" in row and '<td class="num">1</td>' in row and "<td>admin</td>" in row
    html = admin.get(f"/projects/{ids['zeta']}", headers={"accept": "text/html"})
    assert html.status_code == 200, html.text
    assert f'<a id="workspace-link" href="/workspaces/{ids["alpha"]}">alpha</a>' in html.text
    assert "<title>zeta · alpha" in html.text
