"""Answers are held to their declared models: `routes.contract.route` registers a JSON route with its table
entry's response model, so a handler answering a wrong shape is a 500 ErrorBody, never a wrong answer."""

from __future__ import annotations

import typing

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient
from starlette.responses import Response

from stalwart.api.models.errors import ErrorBody
from stalwart.api.models.sso import SsoInfo
from stalwart.api.routes_table import BY_KEY, JSON
from stalwart.master import errors
from stalwart.master.app import create_app
from stalwart.master.routes.contract import answer_model, route
from stalwart.master.settings import MasterSettings

OIDC = "/api/v1/auth/oidc"
"""An open JSON route of the table (its answer: SsoInfo, `enabled` required): needs no credentials."""


def _client(answer: object) -> TestClient:
    """An app with the master's error handling and one route, GET OIDC, whose handler answers `answer`."""
    app = FastAPI()
    errors.install(app)
    router = APIRouter(prefix="/api/v1/auth")

    @route(router, "GET", "/oidc")
    async def handler() -> object:
        return answer

    app.include_router(router)
    return TestClient(app, raise_server_exceptions=False)


def test_an_answer_missing_a_required_field_is_a_500_error_body_not_a_pass() -> None:
    with _client({"provider": "Okta"}) as http:  # `enabled` missing
        reply = http.get(OIDC)
    assert reply.status_code == 500, reply.text
    body = ErrorBody.model_validate(reply.json())
    assert body.error.kind == "internal"
    assert "ResponseValidationError" in body.error.message


@pytest.mark.parametrize("answer", [{"enabled": "maybe"}, ErrorBody.model_validate(
    {"error": {"kind": "internal", "message": "x"}})])
def test_a_wrong_type_or_another_model_is_refused_too(answer: object) -> None:
    with _client(answer) as http:
        assert http.get(OIDC).status_code == 500


def test_a_right_answer_passes_with_only_the_fields_the_handler_set() -> None:
    with _client(SsoInfo(enabled=False)) as http:
        reply = http.get(OIDC)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == JSON
    assert reply.content == b'{"enabled":false}'  # `provider` was left unset: it stays out, as before
    with _client({"enabled": True, "provider": "Okta", "extra": [1]}) as http:  # fields the model lacks stay
        assert http.get(OIDC).json() == {"enabled": True, "provider": "Okta", "extra": [1]}


def test_pages_files_and_streams_stay_raw_responses() -> None:
    for spec in BY_KEY.values():
        model = answer_model(spec)
        if spec.content_type == JSON and spec.response is not None and not spec.streaming:
            assert model is spec.response, spec.key
        else:
            assert model is None, spec.key


NOT_YET: set[tuple[str, str]] = set()
"""Routes whose handler is not yet annotated with its model (FastAPI checks their answers all the same)."""


def test_every_json_route_of_the_master_answers_its_model_and_its_handler_says_so(tmp_path) -> None:
    """Each JSON route is registered with its table entry's model, and its handler is annotated to return that
    model, or a raw Response where it builds the answer itself (the UI's ETag'd models, the binary series)."""
    app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, ui_metrics_index=False))
    wrong = []
    for context in iter_route_contexts(app.routes):
        r = context.original_route
        if not isinstance(r, APIRoute):
            continue
        for method in r.methods - {"HEAD"}:
            spec = BY_KEY[(method, context.path)]
            assert r.response_model is answer_model(spec), spec.key
            if answer_model(spec) is None:
                continue
            returns = typing.get_type_hints(r.endpoint).get("return")
            if returns not in (spec.response, spec.response | Response, Response) and spec.key not in NOT_YET:
                wrong.append(f"{method} {context.path}: {r.endpoint.__module__}.{r.endpoint.__name__} -> {returns}")
    assert wrong == [], "handlers not annotated with their route's response model:\n" + "\n".join(sorted(wrong))
