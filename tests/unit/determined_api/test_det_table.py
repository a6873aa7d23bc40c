"""The Determined listener's route table and app: the table covers every route of the app and nothing else, every
route is checked as its entry says, errors are Determined's shape, and paging follows its rules."""

from __future__ import annotations

import pytest
from fastapi.routing import APIWebSocketRoute, iter_route_contexts
from fastapi.testclient import TestClient

from stalwart.api.determined_routes import DET_BY_KEY, DET_ROUTES
from stalwart.api.errors import InvalidRequest
from stalwart.api.models.determined.wire import DetErrorBody
from stalwart.api.routes_table import BY_KEY
from stalwart.master.app import create_app
from stalwart.master.determined_api.app import create_determined_app
from stalwart.master.determined_api.wire import page, rfc3339
from stalwart.master.settings import MasterSettings


@pytest.fixture()
def det_app(tmp_path):
    app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, ui_metrics_index=False))
    return create_determined_app(app.state.master)


def test_the_table_covers_every_route_of_the_determined_app_and_nothing_else(det_app):
    served = set()
    for r in iter_route_contexts(det_app.routes):
        assert not isinstance(r.route, APIWebSocketRoute)
        served |= {(m, r.path) for m in getattr(r, "methods", None) or () if m != "HEAD"}
    assert len(DET_BY_KEY) == len(DET_ROUTES), "a route is in the Determined table twice"
    assert sorted(served - set(DET_BY_KEY)) == [], "routes missing from api/determined_routes"
    assert sorted(set(DET_BY_KEY) - served) == [], "table entries for routes the Determined app does not have"


def test_every_entry_answers_determined_errors_and_user_routes_name_their_permission():
    for r in DET_ROUTES:
        assert r.error_model is DetErrorBody, r.key
        if r.auth.value == "user":
            assert r.permission is not None and r.scope is not None, r.key


def test_unknown_paths_and_methods_say_they_are_not_served_in_determineds_shape(det_app):
    with TestClient(det_app) as c:
        for method, path in (("GET", "/api/v1/agents"), ("POST", "/api/v1/notebooks"), ("DELETE", "/info")):
            res = c.request(method, path)
            assert res.status_code in (404, 405), (method, path)
            body = DetErrorBody.model_validate(res.json())
            assert body.error.reason in ("NotFound", "Unimplemented")
            assert "Stalwart does not serve" in body.error.error and "stalwart" in body.error.error


def test_info_needs_no_credentials_and_reports_a_pep440_version(det_app):
    with TestClient(det_app) as c:
        info = c.get("/info").json()
    assert info["version"] == "0.38.1" and info["cluster_id"]


def test_me_without_a_token_is_a_401_and_a_bad_login_names_no_secret(det_app):
    with TestClient(det_app) as c:
        res = c.get("/api/v1/me")
        assert res.status_code == 401 and res.json()["error"]["reason"] == "Unauthenticated"
        res = c.post("/api/v1/auth/login", content=b'{"username": "admin", "password": "x", "isHashed": false}')
        assert res.status_code == 401 and "x" not in res.json()["error"]["error"].split()


def test_a_body_without_content_type_is_read_as_json(det_app):
    with TestClient(det_app) as c:
        res = c.post("/api/v1/auth/login", content=b'{"username": "admin", "password": "", "isHashed": false}')
        assert res.status_code == 200, res.text
        token = res.json()["token"]
        me = c.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).json()
    assert me["user"]["username"] == "admin" and me["user"]["admin"] is True
    assert me["user"]["modifiedAt"] is None or me["user"]["modifiedAt"].endswith("Z")


def test_stalwarts_own_table_is_untouched_by_the_second_one():
    assert ("GET", "/info") not in BY_KEY  # Determined's /info lives only on its listener


def test_paging_follows_determineds_rules():
    rows, p = page(total=5, offset=2, limit=2)
    assert (rows, p.startIndex, p.endIndex, p.total) == (slice(2, 4), 2, 4, 5)
    rows, p = page(total=5, offset=0, limit=0)  # 0: all of them
    assert rows == slice(0, 5) and p.endIndex == 5
    assert page(total=5, offset=5, limit=10)[1].endIndex == 5
    with pytest.raises(InvalidRequest, match="past the end"):
        page(total=5, offset=6, limit=1)


def test_times_are_rfc3339_utc_with_a_z():
    assert rfc3339(0.5) == "1970-01-01T00:00:00.500000Z"
    assert rfc3339(None) is None
