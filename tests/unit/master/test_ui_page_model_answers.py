"""The UI's JSON page models are answered as bytes (with an ETag), so FastAPI cannot check them: `_json` holds each
to its route-table model itself. A model that does not fit is a 500 ErrorBody, never a wrong answer."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from fastapi.testclient import TestClient

from stalwart.api.models.errors import ErrorBody
from stalwart.master import errors
from stalwart.master.ui import model_routes

CLUSTER = "/api/v1/ui/cluster"
"""A page model's route (its table model: ClusterPage, with agents, pools and pending_allocations required)."""


def _client(model: dict[str, object]) -> TestClient:
    """An app with the master's error handling and one route at CLUSTER's path answering `model` as the UI does."""
    app = FastAPI()
    errors.install(app)
    router = APIRouter()

    @router.get(CLUSTER)
    async def handler(request: Request) -> Response:
        return model_routes._json(request, model)

    app.include_router(router)
    return TestClient(app, raise_server_exceptions=False)


def test_a_page_model_that_fits_is_answered_as_built_with_an_etag() -> None:
    res = _client({"agents": [], "pools": [], "pending_allocations": 0}).get(CLUSTER)
    assert res.status_code == 200
    assert res.content == b'{"agents":[],"pools":[],"pending_allocations":0}'
    assert res.headers["etag"].startswith('"')
    again = _client({"agents": [], "pools": [], "pending_allocations": 0}).get(
        CLUSTER, headers={"if-none-match": res.headers["etag"]})
    assert again.status_code == 304


def test_a_page_model_that_does_not_fit_its_model_is_a_500_error_body() -> None:
    for wrong in ({"agents": [], "pools": []}, {"agents": "none", "pools": [], "pending_allocations": 0},
                  {"agents": [], "pools": [], "pending_allocations": -1}):
        res = _client(wrong).get(CLUSTER)
        assert res.status_code == 500, wrong
        body = ErrorBody.model_validate(res.json())
        assert body.error.kind == "internal"
        assert "ValidationError" in body.error.message and "ClusterPage" in body.error.message
