"""Routes declared from the one route table (`api/routes_table.py`).

`route(router, method, path)` registers a handler with what its table entry says: the response model
and every error answer (documented in OpenAPI, bodies of `ErrorBody`), the content type of non-JSON
and streaming answers, and the auth kind. The auth kind is enforced here, once, as a dependency:
cluster routes an agent's own credential (the cluster token only enrolls), allocation routes an allocation token
(its id is left in `request.state.allocation_id`), user routes a user's session or access token and the permission
their entry names (`identity.authz.check_route`; the caller's identity is left in `request.state.identity`).

`openapi_document(app)` finishes the generated document: security schemes, each operation's
`security` and `x-auth-kind`, and the streaming/HTML content types FastAPI cannot infer.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from stalwart.api.auth_kinds import AuthKind
from stalwart.api.models.errors import RouteNotFound
from stalwart.api.routes_table import BY_KEY, HTML, JSON, RouteSpec, lookup
from stalwart.master.cluster import credentials
from stalwart.master.identity import audit, authz, sessions, tokens

F = TypeVar("F", bound=Callable[..., Any])

ERROR_DESCRIPTIONS = {
    400: "invalid request: a path, query or body value is wrong (the message names it)",
    401: "no credentials for this auth kind",
    403: "credentials that do not allow this call",
    404: "not found",
    409: "the object cannot do this in its current state",
    413: "request body over limits.max_request_body",
    429: "too many failed logins for the name or from the address, or password checks at once: wait Retry-After s",
    502: "the task's service does not answer (it is starting, or it stopped)",
    503: "not ready yet (the metrics index is still being built): ask again shortly",
    500: "unexpected master error (the connection stays usable)",
}

SECURITY_SCHEMES: dict[str, dict[str, Any]] = {
    "clusterToken": {"type": "http", "scheme": "bearer",
                     "description": "an agent's own credential (given when it enrolls); the cluster token (the master "
                                    "home's cluster-token file) only on POST /api/v1/agents, to enroll"},
    "allocationToken": {"type": "apiKey", "in": "header", "name": tokens.ALLOCATION_HEADER,
                        "description": "the token of one allocation, given to its trial processes"},
    "userSession": {"type": "http", "scheme": "bearer",
                    "description": "a user's session or access token (POST /api/v1/auth/login, POST /api/v1/tokens)"},
}
SCHEME_OF = {AuthKind.CLUSTER: "clusterToken", AuthKind.ALLOCATION: "allocationToken", AuthKind.USER: "userSession",
             AuthKind.PROXY: "userSession"}


def _master_of(request: Request) -> Any:
    return request.app.state.master


async def require_cluster(request: Request) -> None:
    """An agent's own credential (its id is left in `request.state.agent_id`), for the agent or allocation the path
    names; the bare cluster token only on enrollment (`agent_id` None). Headers and path only: callable before the
    body is read, on a request built from the ASGI scope (`cluster.credentials.authenticate`)."""
    request.state.agent_id = credentials.authenticate(_master_of(request), request)


async def require_allocation(request: Request) -> None:
    request.state.allocation_id = tokens.require_allocation(request, _master_of(request).secret)


async def require_cluster_or_allocation(request: Request) -> None:
    """Agents ship task logs with their own credential (the handler checks the allocations the body names); a trial
    ships its own with its allocation token."""
    m = _master_of(request)
    if request.headers.get(tokens.ALLOCATION_HEADER):
        request.state.allocation_id = tokens.require_allocation(request, m.secret)
        request.state.agent_id = None
    else:
        request.state.agent_id = credentials.authenticate(m, request)
        request.state.allocation_id = None


def user_check(spec: RouteSpec) -> Callable[[Request], Awaitable[None]]:
    """The check of one user route: a live session (401), then the route's permission on its target (403)."""
    authz.check_declaration(spec)  # a route whose scope the check could not decide is never registered

    async def require_user(request: Request) -> None:
        m = _master_of(request)
        target = authz.target_of(request.path_params)
        audit.mark(request, None, target)
        ident = sessions.authenticate(m, request)
        request.state.identity = ident
        audit.mark(request, ident.username, target)
        authz.check_route(m, ident, spec, request.path_params, request.query_params)

    return require_user


def user_or_allocation(spec: RouteSpec) -> Callable[[Request], Awaitable[None]]:
    """A read a trial makes too (Determined's get_experiment_best_validation): its allocation token, else a user's
    session with the route's permission."""
    as_user = user_check(spec)

    if spec.path_values != ("exp_id",):
        raise ValueError(f"{spec.method} {spec.path}: an allocation token may read only its own experiment, so a "
                         "route it may call names exactly one experiment (exp_id)")

    async def check(request: Request) -> None:
        if request.headers.get(tokens.ALLOCATION_HEADER):
            await require_allocation(request)
            authz.check_allocation_reads(_master_of(request), request.state.allocation_id, request.path_params)
        else:
            await as_user(request)

    return check


def _auth_dependency(spec: RouteSpec) -> Callable[[Request], Awaitable[None]] | None:
    # async: a token check is a few microseconds of CPU; a sync dependency would cost a thread hop per call
    kinds = {spec.auth, *spec.also_auth}
    if kinds == {AuthKind.USER}:
        return user_check(spec)
    if kinds == {AuthKind.USER, AuthKind.ALLOCATION}:
        return user_or_allocation(spec)
    if kinds == {AuthKind.CLUSTER, AuthKind.ALLOCATION}:
        return require_cluster_or_allocation
    if kinds == {AuthKind.CLUSTER}:
        return require_cluster
    if kinds == {AuthKind.ALLOCATION}:
        return require_allocation
    if kinds == {AuthKind.OPEN}:
        return None
    raise ValueError(f"{spec.method} {spec.path}: no check for auth kinds {sorted(k.value for k in kinds)}")


def responses(spec: RouteSpec) -> dict[int | str, dict[str, Any]]:
    """The `responses` FastAPI documents for one route: the 200 answer and each error of the table."""
    ok: dict[str, Any] = {"description": "success"}
    if spec.response is not None:
        ok["model"] = spec.response
    out: dict[int | str, dict[str, Any]] = {200: ok}
    for code in (*spec.errors, 500):
        out[code] = {"model": spec.error_model, "description": ERROR_DESCRIPTIONS.get(code, "error")}
    return out


def answer_model(spec: RouteSpec) -> type[BaseModel] | None:
    """The model FastAPI holds a route's answer to: its table entry's `response` where the answer is one JSON
    document; None (a raw `Response`, checked by nothing) for pages, files, streams and binary series.

    FastAPI validates what the handler returns against it (a wrong shape is a 500 ErrorBody, never a wrong
    answer) and serializes it with pydantic, leaving out the fields the handler did not set, as the dicts the
    handlers answered before left them out. A handler that returns the model instance costs no second check."""
    if spec.response is None or spec.content_type != JSON or spec.streaming:
        return None
    return spec.response


def route(router: APIRouter, method: str, path: str = "", *, parses_body: bool = False,
          table: dict[tuple[str, str], RouteSpec] = BY_KEY, **kw: Any) -> Callable[[F], F]:
    """Register the decorated handler as `method router.prefix+path`, as its entry in `table` (the master's own
    route table by default; Determined's listener passes its own) declares it.

    A handler normally takes its body as the table's request model (FastAPI validates it). A hot path
    whose handler validates the raw body itself, faster, says `parses_body=True`: the request model is
    then only documented, and that handler's validator must accept exactly what the model accepts."""
    spec = lookup(method, router.prefix + path, table)
    extra: dict[str, Any] = {}
    if parses_body:
        if spec.request is None:
            raise ValueError(f"{method} {spec.path}: parses_body without a request model in the route table")
        extra["requestBody"] = {"required": True, "content": {JSON: {"schema": {
            "$ref": f"#/components/schemas/{spec.request.__name__}"}}}}
        _DOCUMENTED_ONLY.add(spec.request)

    def register(handler: F) -> F:
        check = _auth_dependency(spec)
        router.add_api_route(
            path, handler, methods=[method], response_model=answer_model(spec), response_model_exclude_unset=True,
            responses=responses(spec), dependencies=[Depends(check)] if check else None,
            openapi_extra=extra or None, **kw)
        return handler

    return register


_DOCUMENTED_ONLY: set[type[BaseModel]] = set()
"""Request models of `parses_body` routes: their schemas are added to the document by openapi_document."""


def _add_schema(schemas: dict[str, Any], model: type[BaseModel]) -> dict[str, str]:
    """Put `model`'s JSON schema (and those it refers to) under components/schemas; return a $ref to it."""
    item = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(item.pop("$defs", {}))
    schemas.setdefault(model.__name__, item)
    return {"$ref": f"#/components/schemas/{model.__name__}"}


_BY_DOCUMENTED_KEY = {(m, re.sub(r"\{(\w+):\w+\}", r"{\1}", p)): spec for (m, p), spec in BY_KEY.items()}
"""The table by the paths the document shows: `{path:path}` is documented as `{path}`."""


def _allow_routing_404(op: dict[str, Any], schemas: dict[str, Any]) -> None:
    """A string path value with an encoded `/` in it makes the path match no route: then the router answers its
    own 404 body (`RouteNotFound`), which the operation's 404 documents beside the ErrorBody."""
    strings = [p for p in op.get("parameters", []) if p.get("in") == "path"
               and p.get("schema", {}).get("type") == "string"]
    answer = op.get("responses", {}).get("404")
    if not strings or answer is None or JSON not in answer.get("content", {}):
        return
    routing = _add_schema(schemas, RouteNotFound)
    documented = answer["content"][JSON]["schema"]
    answer["content"][JSON]["schema"] = {"anyOf": [documented, routing]}


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document with the route table's auth kinds and content types filled in."""
    if app.openapi_schema:
        return app.openapi_schema
    about = "The Stalwart master's REST API. Each operation's `x-auth-kind` says who may call it."
    doc = get_openapi(title=app.title, version=app.version, routes=app.routes, description=about)
    doc.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
    schemas = doc["components"].setdefault("schemas", {})
    for model in _DOCUMENTED_ONLY:
        _add_schema(schemas, model)
    for path, operations in doc.get("paths", {}).items():
        for method, op in operations.items():
            spec = _BY_DOCUMENTED_KEY.get((method.upper(), path))
            if spec is None:
                continue
            kinds = (spec.auth, *spec.also_auth)
            op["x-auth-kind"] = [k.value for k in kinds]
            if spec.permission is not None:
                op["x-permission"] = spec.permission.name
            op["security"] = [{SCHEME_OF[k]: []} for k in kinds if k in SCHEME_OF]
            # request validation answers 400 with an ErrorBody (app.py), never FastAPI's default 422
            op.get("responses", {}).pop("422", None)
            ok = op.get("responses", {}).get("200")
            if ok is not None and spec.content_type != JSON:
                schema: dict[str, Any] = {"type": "string"}
                if spec.stream_item is not None:
                    schema = _add_schema(schemas, spec.stream_item)
                elif spec.content_type not in ("text/html", "text/event-stream"):
                    schema = {"type": "string", "format": "binary"}
                ok["content"] = {spec.content_type: {"schema": schema}}
            _allow_routing_404(op, schemas)
            if spec.content_type == HTML:  # a page's errors are pages too (ui/pages.error_page)
                for code, answer in op.get("responses", {}).items():
                    if code != "200":
                        answer["content"] = {HTML: {"schema": {"type": "string"}}}
            for other in spec.also_content if ok is not None else ():
                ok.setdefault("content", {})[other] = {"schema": {"type": "string", "format": "binary"}}
    for unused in ("HTTPValidationError", "ValidationError"):
        doc["components"].get("schemas", {}).pop(unused, None)
    app.openapi_schema = doc
    return doc
