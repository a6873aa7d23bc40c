"""The app's OpenAPI document states the route table's contract for every route the app serves.

For each route: it is in the document; its 200 answer has a schema (a component for JSON, the table's content
type for NDJSON, server-sent events, HTML and files); a table entry with a request model documents that request
body (and one without documents none); every error code of the entry, and the 500 every route can answer, is
documented with the ErrorBody schema; `x-auth-kind` and `security` say the entry's auth kind. No operation
documents FastAPI's 422: request validation answers 400 with an ErrorBody.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts

from stalwart.api.auth_kinds import AuthKind
from stalwart.api.routes_table import HTML, JSON, ROUTES, WEBSOCKET, RouteSpec
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings

Document = dict[str, Any]

SCHEME_OF_KIND = {AuthKind.CLUSTER: "clusterToken", AuthKind.ALLOCATION: "allocationToken",
                  AuthKind.USER: "userSession", AuthKind.PROXY: "userSession"}
"""The security scheme that stands for each auth kind (an open route needs none)."""

FASTAPI_DOCUMENT_ROUTES = ("/api/v1/openapi.json",)
"""FastAPI's own route that serves the document: not an operation of the API."""

ERROR_BODY_REF = "#/components/schemas/ErrorBody"
ROUTE_NOT_FOUND_REF = "#/components/schemas/RouteNotFound"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    home: pathlib.Path = tmp_path_factory.mktemp("contract")
    return create_app(MasterSettings(db_url=f"sqlite:///{home / 'm.db'}", home=home, ui_metrics_index=False))


@pytest.fixture(scope="module")
def doc(app: FastAPI) -> Document:
    return app.openapi()


def _documented_path(path: str) -> str:
    """A route's path as the document writes it: `{path:path}` (a Starlette convertor) is `{path}` there."""
    return re.sub(r"\{(\w+):\w+\}", r"{\1}", path)


def _operation(doc: Document, spec: RouteSpec) -> Document:
    operation = doc["paths"].get(_documented_path(spec.path), {}).get(spec.method.lower())
    assert operation is not None, f"{spec.method} {spec.path} is not in the OpenAPI document"
    return operation


def _component(doc: Document, schema: Document, where: str) -> Document:
    """The component a `{"$ref": ...}` schema names; fails naming `where` when it is not a component ref."""
    ref = schema.get("$ref")
    assert isinstance(ref, str) and ref.startswith("#/components/schemas/"), f"{where}: not a component: {schema}"
    name = ref.rsplit("/", 1)[1]
    component = doc["components"]["schemas"].get(name)
    assert component is not None, f"{where}: {ref} is not among the document's components"
    return component


def _documented_routes() -> list[RouteSpec]:
    return [spec for spec in ROUTES if spec.path not in FASTAPI_DOCUMENT_ROUTES and spec.method != WEBSOCKET]


def _id(spec: RouteSpec) -> str:
    return f"{spec.method} {spec.path}"


def test_every_route_of_the_app_is_in_the_document(app: FastAPI, doc: Document) -> None:
    missing = []
    for route in iter_route_contexts(app.routes):
        for method in sorted(getattr(route, "methods", None) or ()):
            if method == "HEAD" or route.path in FASTAPI_DOCUMENT_ROUTES:
                continue
            if method.lower() not in doc["paths"].get(_documented_path(route.path or ""), {}):
                missing.append(f"{method} {route.path}")
    assert missing == [], "routes the app serves that the OpenAPI document does not describe"


def test_every_operation_of_the_document_is_a_route_of_the_table(doc: Document) -> None:
    table = {(spec.method, _documented_path(spec.path)) for spec in ROUTES}
    extra = [f"{method.upper()} {path}" for path, operations in doc["paths"].items() for method in operations
             if (method.upper(), path) not in table]
    assert extra == [], "operations in the document with no route table entry"


@pytest.mark.parametrize("spec", _documented_routes(), ids=_id)
def test_the_success_answer_has_a_schema_of_the_tables_content_type(doc: Document, spec: RouteSpec) -> None:
    ok = _operation(doc, spec)["responses"].get("200")
    assert ok is not None, f"{_id(spec)}: no 200 answer documented"
    content = ok.get("content", {})
    assert list(content) == [spec.content_type, *spec.also_content], f"{_id(spec)}: 200 content types {list(content)}"
    schema = content[spec.content_type].get("schema", {})
    if spec.content_type == JSON:
        assert spec.response is not None, f"{_id(spec)}: a JSON route without a response model in the table"
        component = _component(doc, schema, f"{_id(spec)} 200")
        assert component.get("title") == spec.response.__name__, f"{_id(spec)}: 200 is not {spec.response.__name__}"
    elif spec.stream_item is not None:
        component = _component(doc, schema, f"{_id(spec)} 200 stream item")
        assert component.get("title") == spec.stream_item.__name__, f"{_id(spec)}: items are not {spec.stream_item}"
    else:
        assert schema.get("type") == "string", f"{_id(spec)}: a {spec.content_type} answer documented as {schema}"


@pytest.mark.parametrize("spec", _documented_routes(), ids=_id)
def test_the_request_body_is_the_tables_request_model(doc: Document, spec: RouteSpec) -> None:
    body = _operation(doc, spec).get("requestBody")
    if spec.request is None:
        assert body is None, f"{_id(spec)}: documents a request body the table does not declare"
        return
    assert body is not None, f"{_id(spec)}: the table's {spec.request.__name__} body is not documented"
    content = body.get("content", {})
    assert JSON in content, f"{_id(spec)}: the request body is not JSON: {list(content)}"
    component = _component(doc, content[JSON].get("schema", {}), f"{_id(spec)} request body")
    assert component.get("title") == spec.request.__name__, f"{_id(spec)}: the body is not {spec.request.__name__}"


@pytest.mark.parametrize("spec", _documented_routes(), ids=_id)
def test_every_error_of_the_table_is_documented_with_the_error_body(doc: Document, spec: RouteSpec) -> None:
    answers = _operation(doc, spec)["responses"]
    for code in (*spec.errors, 500):
        answer = answers.get(str(code))
        assert answer is not None, f"{_id(spec)}: error {code} of the table is not documented"
        content = answer.get("content", {})
        if spec.content_type == HTML and JSON not in content:  # a page's errors may be documented as pages
            assert HTML in content, f"{_id(spec)}: error {code} has no content"
            continue
        assert JSON in content, f"{_id(spec)}: error {code} is not documented as JSON: {list(content)}"
        schema = content[JSON].get("schema")
        if code == 404 and re.search(r"\{\w+(:path)?\}", spec.path) and schema != {"$ref": ERROR_BODY_REF}:
            # a string path value with an encoded "/" matches no route: the router's own 404 body is documented too
            assert schema == {"anyOf": [{"$ref": ERROR_BODY_REF}, {"$ref": ROUTE_NOT_FOUND_REF}]}, f"{_id(spec)}: 404"
            continue
        assert schema == {"$ref": ERROR_BODY_REF}, f"{_id(spec)}: error {code} is not ErrorBody"


@pytest.mark.parametrize("spec", _documented_routes(), ids=_id)
def test_the_auth_kind_and_security_are_the_tables(doc: Document, spec: RouteSpec) -> None:
    operation = _operation(doc, spec)
    kinds = (spec.auth, *spec.also_auth)
    assert operation.get("x-auth-kind") == [k.value for k in kinds], f"{_id(spec)}: x-auth-kind"
    expected: list[dict[str, list[str]]] = [{SCHEME_OF_KIND[k]: []} for k in kinds if k in SCHEME_OF_KIND]
    assert operation.get("security") == expected, f"{_id(spec)}: security {operation.get('security')}"


@pytest.mark.parametrize("spec", [s for s in _documented_routes() if s.auth is not AuthKind.OPEN], ids=_id)
def test_every_guarded_route_documents_401_and_403(doc: Document, spec: RouteSpec) -> None:
    """No credentials is a 401, credentials that do not allow the call (a user without the permission) a 403."""
    answers = _operation(doc, spec)["responses"]
    assert {"401", "403"} <= set(answers), f"{_id(spec)}: documents {sorted(answers)}"
    if spec.auth is AuthKind.USER:
        assert spec.permission is not None, f"{_id(spec)}: a user route naming no permission"


def test_the_security_schemes_say_how_each_token_travels(doc: Document) -> None:
    schemes = doc["components"]["securitySchemes"]
    assert schemes["clusterToken"] == {**schemes["clusterToken"], "type": "http", "scheme": "bearer"}
    assert schemes["userSession"] == {**schemes["userSession"], "type": "http", "scheme": "bearer"}
    assert schemes["allocationToken"] == {**schemes["allocationToken"], "type": "apiKey", "in": "header",
                                          "name": "x-allocation-token"}


def test_no_operation_documents_a_422(doc: Document) -> None:
    with_422 = [f"{method.upper()} {path}" for path, operations in doc["paths"].items()
                for method, operation in operations.items() if "422" in operation.get("responses", {})]
    assert with_422 == [], "validation errors answer 400 with an ErrorBody, never FastAPI's 422"
    assert "HTTPValidationError" not in doc["components"].get("schemas", {})
