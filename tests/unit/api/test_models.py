"""The REST models and the route table: they cover every route of the app and validate real answers."""

from __future__ import annotations

import base64
import json
import pathlib

import httpx
import pytest
from fastapi.routing import APIWebSocketRoute, iter_route_contexts
from pydantic import ValidationError

from helpers_auth import bearer
from stalwart.api.errors import _BY_KIND
from stalwart.api.models.common import Id
from stalwart.api.models.errors import ErrorBody
from stalwart.api.models.trials import MetricPoint, ReportMetrics
from stalwart.api.routes_table import BY_KEY, ROUTES, WEBSOCKET, lookup
from stalwart.context import pack_context
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings
from stalwart.testing import LocalTestCluster

REPO = pathlib.Path(__file__).resolve().parents[3]
FAULTS = REPO / "tests" / "integration" / "faults"


def _app_routes(tmp_path) -> set[tuple[str, str]]:
    app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, ui_metrics_index=False))
    out = set()
    for route in iter_route_contexts(app.routes):
        if isinstance(route.route, APIWebSocketRoute):
            out.add((WEBSOCKET, route.path))
        for method in getattr(route, "methods", None) or ():
            if method != "HEAD":
                out.add((method, route.path))
    return out


def test_the_table_covers_every_route_of_the_app_and_nothing_else(tmp_path):
    app = _app_routes(tmp_path)
    table = set(BY_KEY)
    assert len(BY_KEY) == len(ROUTES), "a route is in the table twice"
    assert sorted(app - table) == [], "routes of the app missing from api/routes_table.py"
    assert sorted(table - app) == [], "table entries for routes the app does not have"


def test_every_json_route_names_a_response_model_and_streams_say_their_content_type():
    for r in ROUTES:
        if r.content_type == "application/json" and r.path != "/api/v1/openapi.json":
            assert r.response is not None, r.key
        if r.streaming:
            assert r.content_type in ("application/x-ndjson", "text/event-stream"), r.key
        if r.method in ("POST", "PATCH"):
            assert 413 in r.errors, r.key


def test_every_error_kind_validates_against_the_error_model():
    for cls in _BY_KIND.values():
        body = cls("boom", details=["a: b"]).to_dict()
        assert ErrorBody.model_validate(body).error.kind == cls.kind
    with pytest.raises(ValidationError):
        ErrorBody.model_validate({"error": {"kind": "nonsense", "message": "x"}})


def test_ids_are_bounded_and_metric_values_use_the_wire_strings():
    from pydantic import TypeAdapter

    ids = TypeAdapter(Id)
    assert ids.validate_python(2**63 - 1) == 2**63 - 1
    for bad in (-1, 2**63):
        with pytest.raises(ValidationError):
            ids.validate_python(bad)
    point = MetricPoint.model_validate({"group": "validation", "steps_completed": 3,
                                        "metrics": {"a": "NaN", "b": "-Infinity", "c": 1.5, "d": {"e": [1]}}})
    assert point.metrics["a"] == "NaN"
    with pytest.raises(ValidationError):  # a float NaN cannot travel as JSON: the model refuses it
        MetricPoint.model_validate({"group": "g", "steps_completed": 1, "metrics": {"a": float("nan")}})
    with pytest.raises(ValidationError):
        ReportMetrics.model_validate({"reports": [{"group": "", "steps_completed": 1, "metrics": {}}]})


# -- real answers of a running master ------------------------------------------------------------

CONFIG = """name: models
entrypoint: python3 train.py
environment: {environment_variables: [LEDGER=LEDGER_PATH, STEP_SECONDS=0.01, CHECKPOINT_EVERY=2]}
searcher: {name: single, metric: loss, max_length: 3}
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    """A cluster that ran one 3-step trial and one command to the end."""
    home = tmp_path_factory.mktemp("models")
    with LocalTestCluster(home / "home") as c:
        assert c.admin_token is not None
        http = httpx.Client(base_url=c.url, timeout=60, headers=bearer(c.admin_token))  # the user routes need a session
        config = CONFIG.replace("LEDGER_PATH", str(home / "ledger"))
        context = base64.b64encode(pack_context(FAULTS).data).decode()
        created = _call(http, "POST", "/api/v1/experiments", {"config": config, "context": context},
                        path="/api/v1/experiments")
        exp_id = created["experiment"]["id"]
        c.wait_for(lambda: http.get(f"/api/v1/experiments/{exp_id}").json()["experiment"]["state"] == "COMPLETED",
                   what="the experiment to complete")
        cmd = _call(http, "POST", "/api/v1/commands", {"config": {"entrypoint": ["python3", "-c", "print('hi')"]}},
                    path="/api/v1/commands")
        cmd_id = cmd["command"]["id"]
        c.wait_for(lambda: http.get(f"/api/v1/commands/{cmd_id}").json()["command"]["state"] == "TERMINATED",
                   what="the command to end")
        yield c, http, exp_id, cmd_id, (config, context)
        http.close()


def _call(http: httpx.Client, method: str, url: str, body=None, *, path: str, status: int = 200, headers=None,
          params=None):
    """Call the master and validate the answer against the table entry of `path` (or its error model)."""
    spec = lookup(method, path)
    reply = http.request(method, url, json=body, headers=headers, params=params)
    assert reply.status_code == status, f"{method} {url}: {reply.status_code} {reply.text[:500]}"
    if status >= 400:
        assert status in spec.errors, f"{method} {path}: {status} not among the table's {spec.errors}"
        spec.error_model.model_validate(reply.json())
        return reply.json()
    assert reply.headers["content-type"].startswith(spec.content_type), (path, reply.headers["content-type"])
    if spec.streaming and spec.stream_item is not None:
        for line in reply.text.splitlines():
            if line.strip():
                spec.stream_item.model_validate(json.loads(line))
        return reply.text
    if spec.response is None:
        return reply.content
    data = reply.json()
    spec.response.model_validate(data)
    if spec.request is not None and body is not None:
        spec.request.model_validate(body)
    return data


def test_every_user_get_and_post_answer_validates_against_the_table(master):
    c, http, exp_id, cmd_id, (config, context) = master
    E = "/api/v1/experiments"
    detail = _call(http, "GET", f"{E}/{exp_id}", path=E + "/{exp_id}")
    trial_id = detail["trials"][0]["id"]
    trial = _call(http, "GET", f"/api/v1/trials/{trial_id}", path="/api/v1/trials/{trial_id}")
    uuid = trial["latest_checkpoint"]["uuid"]
    alloc = trial["runs"][0]["id"]
    agent = _call(http, "GET", "/api/v1/agents", path="/api/v1/agents")["agents"][0]["id"]
    job = _call(http, "GET", "/api/v1/jobs", path="/api/v1/jobs")
    gets = {
        "/api/v1/master": "/api/v1/master", E: E, f"{E}/{exp_id}/trials": E + "/{exp_id}/trials",
        f"{E}/{exp_id}/checkpoints": E + "/{exp_id}/checkpoints", f"{E}/{exp_id}/model_def": E + "/{exp_id}/model_def",
        f"/api/v1/trials/{trial_id}/checkpoints": "/api/v1/trials/{trial_id}/checkpoints",
        f"/api/v1/trials/{trial_id}/metrics": "/api/v1/trials/{trial_id}/metrics",
        f"/api/v1/trials/{trial_id}/logs": "/api/v1/trials/{trial_id}/logs",
        f"/api/v1/trials/{trial_id}/metrics/series?group=training": "/api/v1/trials/{trial_id}/metrics/series",
        f"{E}/{exp_id}/metrics/series?group=training&metric=loss": E + "/{exp_id}/metrics/series",
        f"/api/v1/checkpoints/{uuid}": "/api/v1/checkpoints/{uuid}",
        f"/api/v1/checkpoints/{uuid}/download": "/api/v1/checkpoints/{uuid}/download",
        "/api/v1/slots": "/api/v1/slots",
        f"/api/v1/commands/{cmd_id}": "/api/v1/commands/{cmd_id}", "/api/v1/tasks?all=true": "/api/v1/tasks",
        f"/api/v1/tasks/command-{cmd_id}": "/api/v1/tasks/{task_id}",
        f"/api/v1/tasks/command-{cmd_id}/logs": "/api/v1/tasks/{task_id}/logs",
        "/api/v1/ui/experiments": "/api/v1/ui/experiments", f"/api/v1/ui/experiments/{exp_id}": E.replace(
            "/api/v1", "/api/v1/ui") + "/{exp_id}",
        f"/api/v1/ui/experiments/{exp_id}/hparams": "/api/v1/ui/experiments/{exp_id}/hparams",
        f"/api/v1/ui/trials/{trial_id}": "/api/v1/ui/trials/{trial_id}",
        f"/api/v1/ui/trials/{trial_id}/logs": "/api/v1/ui/trials/{trial_id}/logs",
        "/api/v1/ui/cluster": "/api/v1/ui/cluster", "/api/v1/ui/status": "/api/v1/ui/status",
        "/": "/", f"/trials/{trial_id}": "/trials/{trial_id}", "/api/v1/openapi.json": "/api/v1/openapi.json",
    }
    for url, path in gets.items():
        _call(http, "GET", url, path=path)
    if job["jobs"]:
        job_id = job["jobs"][0]["job_id"]
        _call(http, "GET", f"/api/v1/jobs/{job_id}", path="/api/v1/jobs/{job_id}")
    _call(http, "POST", "/api/v1/searcher/preview", {"config": config}, path="/api/v1/searcher/preview")
    _call(http, "POST", f"{E}/{exp_id}/archive", path=E + "/{exp_id}/{action}")
    _call(http, "POST", f"{E}/{exp_id}/unarchive", path=E + "/{exp_id}/{action}")
    _call(http, "POST", f"/api/v1/agents/{agent}/disable", {"drain": True}, path="/api/v1/agents/{agent_id}/disable")
    _call(http, "POST", f"/api/v1/agents/{agent}/enable", path="/api/v1/agents/{agent_id}/enable")
    _call(http, "POST", f"{E}", {"config": config, "context": context, "validate_only": True}, path=E)
    # errors: each in the table's codes, each body the error model
    _call(http, "GET", f"{E}/999999", path=E + "/{exp_id}", status=404)
    _call(http, "GET", f"{E}/{exp_id}/searcher/best_searcher_validation_metric",
          path=E + "/{exp_id}/searcher/best_searcher_validation_metric", status=404)
    _call(http, "POST", f"{E}/{exp_id}/pause", path=E + "/{exp_id}/{action}", status=409)
    _call(http, "POST", E, {"config": ""}, path=E, status=400)
    _call(http, "GET", f"/api/v1/trials/{trial_id}/metrics/series?x=nope",
          path="/api/v1/trials/{trial_id}/metrics/series", status=400)
    with httpx.Client(base_url=c.url, timeout=60) as anonymous:  # trial and agent calls without their tokens
        _call(anonymous, "POST", f"/api/v1/trials/{trial_id}/metrics", {"reports": []},
              path="/api/v1/trials/{trial_id}/metrics", status=401)
        _call(anonymous, "GET", f"/api/v1/allocations/{alloc}/context",
              path="/api/v1/allocations/{allocation_id}/context", status=401)
        _call(anonymous, "GET", "/api/v1/experiments", path="/api/v1/experiments", status=401)


def test_agent_side_answers_validate_against_the_table(master):
    c, http, exp_id, _cmd_id, _config = master
    auth = {"authorization": f"Bearer {c.cluster_token()}"}  # enrollment only
    trial_id = http.get(f"/api/v1/experiments/{exp_id}").json()["trials"][0]["id"]
    alloc = http.get(f"/api/v1/trials/{trial_id}").json()["runs"][0]["id"]
    enrolled = _call(http, "POST", "/api/v1/agents", {"agent_id": "models-probe", "slots": 0}, path="/api/v1/agents",
                     headers=auth)
    probe = {"authorization": f"Bearer {enrolled['credential']}"}
    _call(http, "GET", "/api/v1/agents/models-probe/actions", path="/api/v1/agents/{agent_id}/actions",
          headers=probe)
    _call(http, "GET", f"/api/v1/allocations/{alloc}/context", path="/api/v1/allocations/{allocation_id}/context",
          headers={"authorization": f"Bearer {c.agent_credential(0)}"})  # its agent's credential
    _call(http, "POST", "/api/v1/task/logs", {"logs": []}, path="/api/v1/task/logs", headers=probe)
    _call(http, "GET", "/api/v1/agents/credentials", path="/api/v1/agents/credentials")
    _call(http, "POST", "/api/v1/agents", {"agent_id": "", "slots": 0}, path="/api/v1/agents", headers=auth,
          status=400)
