"""The web UI's routes: HTML pages, their JSON page models (ETag'd), live updates over SSE, static assets, and the
audit-log page for admins.

Page models say, per experiment, whether the caller may change it (`can_edit`: `identity.authz.allowed` with
`edit_experiments`), so the pages can disable what the master would refuse anyway.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import RedirectResponse, Response, StreamingResponse

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest, NotFoundError, StalwartError
from stalwart.api.models.common import MAX_ID
from stalwart.api.routes_table import lookup
from stalwart.master.identity import authz, sessions
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import users as user_queries, workspaces as workspace_queries
from stalwart.master.routes.common import IdPath, master
from stalwart.master.routes.contract import route
from stalwart.master.service import Master
from stalwart.master.ui import audit_view, models, pages, trial_models, workspace_models
from stalwart.master.ui.metrics_index import MetricsIndex
from stalwart.master.ui.viewer import viewer_of

router = APIRouter(tags=["ui"])

Page = Literal["experiments", "experiment", "trial", "cluster"]
ModelBuilder = Callable[[], dict[str, Any]]
# typed query values of the page models; None: the page's default
Text = Annotated[str | None, Query(max_length=1000)]
Word = Annotated[str | None, Query(max_length=64)]
PageLimit = Annotated[int | None, Query(ge=1, le=1000, description="rows per page")]
PageOffset = Annotated[int | None, Query(ge=0, le=MAX_ID, description="rows to skip")]
IdQuery = Annotated[int | None, Query(ge=0, le=MAX_ID, description="the id of the experiment or trial page")]
Tail = Annotated[int, Query(ge=1, le=20000, description="the most lines to return, the newest")]
Interval = Annotated[float, Query(ge=0, le=3600, allow_inf_nan=False,
                                  description="seconds between checks for a new model (0.2..10)")]
HtmlId = Annotated[str, Path(description="an experiment, trial or task id")]

LIST_PARAMS = {"q": str, "state": str, "label": str, "owner": str, "archived": str, "sort": str, "order": str,
               "limit": int, "offset": int, "project": int}
ProjectQuery = Annotated[int | None, Query(ge=0, le=MAX_ID, description="only the experiments of this project")]
EXP_PARAMS = {"sort": str, "order": str, "limit": int, "offset": int}


def _idx(request: Request) -> MetricsIndex | None:
    idx: MetricsIndex | None = getattr(request.app.state, "metrics_index", None)
    if idx is not None:
        idx.refresh()
    return idx


def _given(**values: Any) -> dict[str, Any]:
    """The page-model parameters given in the query (None: not given, the page's default applies)."""
    return {k: v for k, v in values.items() if v is not None}


def _builder(request: Request, page: Page, ident: int | None, params: dict[str, Any]) -> ModelBuilder:
    """A function that builds the current model of `page` (checked now, so errors come before streaming)."""
    m: Master = master(request)
    caller: Identity = request.state.identity
    if page == "experiments":
        scope = _experiment_scope(m, caller)
        return lambda: _with_can_edit(m, caller, models.experiments_page(m, _idx(request), workspaces=scope, **params))
    if page == "cluster":
        return lambda: _cluster_seen_by(m, caller, trial_models.cluster_page(m))
    if ident is None:
        raise InvalidRequest(f"id: required for page={page}")
    if page == "experiment":
        exp_params = {k: v for k, v in params.items() if k in EXP_PARAMS}
        return lambda: _with_can_edit(m, caller, models.experiment_page(m, _idx(request), ident, **exp_params))
    return lambda: trial_models.trial_page(m, _idx(request), ident)


def _may_view(request: Request) -> workspace_models.Visible:
    """May the caller see a workspace (and its projects)? Pages leave out, or answer 404 for, the others."""
    seen = authz.viewable_workspaces(master(request), request.state.identity, P.VIEW_WORKSPACES)
    return lambda workspace_id: seen is None or workspace_id in seen


def _experiment_scope(m: Master, caller: Identity) -> set[int] | None:
    """The workspaces whose experiments `caller` may list (with roles, those where it has view_experiments);
    None: every one."""
    return authz.viewable_workspaces(m, caller, P.VIEW_EXPERIMENTS)


def _cluster_seen_by(m: Master, caller: Identity, model: dict[str, Any]) -> dict[str, Any]:
    """The cluster page as `caller` may see it: a slot busy with an experiment it may not view shows only that it
    is busy."""
    scope = _experiment_scope(m, caller)
    if scope is None:
        return model
    slots = [s for a in model["agents"] for s in a["slots_detail"] if s["experiment_id"] is not None]
    with m.db.begin() as conn:
        places = workspace_queries.workspaces_of_experiments(conn, sorted({s["experiment_id"] for s in slots}))
    for slot in slots:
        if places.get(slot["experiment_id"]) not in scope:
            slot.update(trial_id=None, experiment_id=None, experiment_name=None)
    return model


def _with_can_edit(m: Master, caller: Identity, model: dict[str, Any]) -> dict[str, Any]:
    """Mark each experiment of a page model with whether `caller` may pause, kill or archive it."""
    shown = [*model.get("experiments", ()), *([model["experiment"]] if "experiment" in model else [])]
    targets = authz.experiment_targets(m, shown)
    for exp in shown:
        exp["can_edit"] = authz.allowed(m, caller, P.EDIT_EXPERIMENTS, targets[int(exp["id"])])
    return model


def _json(request: Request, data: dict[str, Any]) -> Response:
    body = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


# --- HTML pages -----------------------------------------------------------------------------------
# A page's errors are pages too (404 for an id that names nothing), and its query values are read leniently
# (an empty one is left out), as the browser's address bar holds them.

def _page_id(raw: str, what: str) -> int:
    """The id in a page's path; a 404 when it is no id, or one no row can have."""
    if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_ID:
        raise NotFoundError(f"{what} {raw!r} not found: ids are whole numbers below 2^63")
    return int(raw)


def _query(request: Request, spec: dict[str, type]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, kind in spec.items():
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            continue
        if kind is int:
            if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_ID:
                raise InvalidRequest(f"{name}: expected a whole number below 2^63, got {raw[:40]!r}")
            out[name] = int(raw)
        else:
            out[name] = raw
    return out


def _page(request: Request, template: str, title: str, page: str, ident: str | None = None) -> Response:
    model: dict[str, Any] = {}
    try:
        if page == "experiments":
            model = _builder(request, "experiments", None, _query(request, LIST_PARAMS))()
        elif page == "cluster":
            model = _builder(request, "cluster", None, {})()
        elif page == "experiment" and ident is not None:
            model = _builder(request, "experiment", _page_id(ident, page), _query(request, EXP_PARAMS))()
        elif page == "trial" and ident is not None:
            model = _builder(request, "trial", _page_id(ident, page), {})()
        elif page == "project" and ident is not None:
            head = workspace_models.project_head(master(request), _may_view(request), _page_id(ident, page))
            params = {**_query(request, LIST_PARAMS), "project": head["id"]}
            model = {**_builder(request, "experiments", None, params)(), "project": head}
    except StalwartError as err:
        return pages.error_page(err.http_status, err.message, err.details, viewer=viewer_of(request))
    preload: list[str] = []
    if page == "experiment":
        title = f"{model['experiment']['name']} · experiment {ident}"
        preload = [model["series_url"]]
    elif page == "trial":
        title = f"Trial {ident} · {model['experiment']['name']}"
        preload = [u for u in model["series_urls"].values() if u]
    elif page == "project":
        title = f"{model['project']['name']} · {model['project']['workspace_name']}"
    entry = "experiments.js" if page == "project" else template.replace(".html", ".js")
    return pages.render(template, title=title, page=page, model=model, ident=ident, entry=entry, preload=preload,
                        viewer=viewer_of(request), project=model.get("project"))


@route(router, "GET", "/")
async def home(request: Request) -> Response:
    return _page(request, "experiments.html", "Experiments", "experiments")


@route(router, "GET", "/experiments")
async def experiments_list(request: Request) -> Response:
    return _page(request, "experiments.html", "Experiments", "experiments")


@route(router, "GET", "/experiments/{exp_id}")
async def experiment(request: Request, exp_id: HtmlId) -> Response:
    return _page(request, "experiment.html", "Experiment", "experiment", exp_id)


@route(router, "GET", "/audit")
async def audit_page(request: Request) -> Response:
    """The audit log for admins, newest first; `?user=` only one user's calls, `?limit=` how many (default 200)."""
    query = request.query_params
    user = (query.get("user") or "").strip() or None
    try:
        limit = audit_view.page_limit(query.get("limit"))
    except InvalidRequest as err:
        return pages.error_page(400, err.message, viewer=viewer_of(request))
    with master(request).db.begin() as conn:
        rows = user_queries.audit_entries(conn, username=user, limit=limit)
    return pages.render("audit.html", title="Audit log", page="audit", entries=audit_view.rows(rows), user=user or "",
                        limit=limit, viewer=viewer_of(request))


@route(router, "GET", "/workspaces")
async def workspaces_page(request: Request) -> Response:
    """The workspaces the caller may see, with their projects and experiments counted; `?archived=true` also
    the archived ones."""
    archived = request.query_params.get("archived", "") == "true"
    model = workspace_models.workspaces_page(master(request), _may_view(request), archived=archived)
    return pages.render("workspaces.html", title="Workspaces", page="workspaces", viewer=viewer_of(request), **model)


@route(router, "GET", "/workspaces/{workspace_id}")
async def workspace_page(request: Request, workspace_id: HtmlId) -> Response:
    """One workspace: its projects, each with its experiments counted."""
    try:
        ws_id = _page_id(workspace_id, "workspace")
        model = workspace_models.workspace_page(master(request), _may_view(request), ws_id)
    except StalwartError as err:
        return pages.error_page(err.http_status, err.message, err.details, viewer=viewer_of(request))
    return pages.render("workspace.html", title=f"{model['workspace']['name']} · workspace", page="workspace",
                        viewer=viewer_of(request), **model)


@route(router, "GET", "/projects/{project_id}")
async def project_page(request: Request, project_id: HtmlId) -> Response:
    """One project: its experiments, as the experiments list shows them (filters, sorting, bulk actions)."""
    return _page(request, "project.html", "Project", "project", project_id)


@route(router, "GET", "/experiments/{exp_id}/trials/{trial_id}")
async def experiment_trial(exp_id: HtmlId, trial_id: HtmlId) -> Response:
    """Determined's trial URL: the same trial page."""
    try:
        return RedirectResponse(f"/trials/{_page_id(trial_id, 'trial')}")
    except NotFoundError as err:
        return pages.error_page(404, err.message)


@route(router, "GET", "/trials/{trial_id}")
async def trial(request: Request, trial_id: HtmlId) -> Response:
    return _page(request, "trial.html", "Trial", "trial", trial_id)


@route(router, "GET", "/cluster")
async def cluster(request: Request) -> Response:
    return _page(request, "cluster.html", "Cluster", "cluster")


@route(router, "GET", "/jobs")
async def jobs(request: Request) -> Response:
    return _page(request, "jobs.html", "Job queue", "jobs")


@route(router, "GET", "/tasks")
async def tasks(request: Request) -> Response:
    return _page(request, "tasks.html", "Tasks", "tasks")


@route(router, "GET", "/tasks/{task_id}")
async def task(request: Request, task_id: HtmlId) -> Response:
    return _page(request, "tasks.html", f"Task {task_id}", "tasks", task_id)


@route(router, "GET", "/docs/rest-api/")
async def rest_api_docs(request: Request) -> Response:
    """Swagger UI for the master's OpenAPI spec, from the vendored copy (works with no internet access)."""
    base = f"/ui/static/{pages.VERSION}/{pages.SWAGGER_UI}"
    return get_swagger_ui_html(openapi_url=request.app.openapi_url, title=f"{request.app.title} · REST API",
                               swagger_js_url=f"{base}/swagger-ui-bundle.js", swagger_css_url=f"{base}/swagger-ui.css",
                               swagger_favicon_url=f"{base}/favicon-32x32.png")


@route(router, "GET", "/ui/static/{version}/{path:path}")
async def static(version: str, path: str) -> Response:
    return pages.static_file(path)


# --- JSON page models and live updates ------------------------------------------------------------

@route(router, "GET", "/api/v1/ui/experiments")
async def experiments_model(request: Request, q: Text = None, state: Word = None, label: Text = None,
                            owner: Text = None, archived: Word = None, sort: Word = None, order: Word = None,
                            limit: PageLimit = None, offset: PageOffset = None, project: ProjectQuery = None
                            ) -> Response:
    """Experiments filtered (q, state, label, owner, archived=true|false|all, project), sorted and paged
    server-side."""
    params = _given(q=q, state=state, label=label, owner=owner, archived=archived, sort=sort, order=order,
                    limit=limit, offset=offset, project=project)
    return _json(request, _builder(request, "experiments", None, params)())


@route(router, "GET", "/api/v1/ui/experiments/{exp_id}")
async def experiment_model(request: Request, exp_id: IdPath, sort: Word = None, order: Word = None,
                           limit: PageLimit = None, offset: PageOffset = None) -> Response:
    """Experiment summary, config, searcher progress and one sorted page of its trials."""
    params = _given(sort=sort, order=order, limit=limit, offset=offset)
    return _json(request, _builder(request, "experiment", exp_id, params)())


@route(router, "GET", "/api/v1/ui/experiments/{exp_id}/hparams")
async def hparams_model(request: Request, exp_id: IdPath) -> Response:
    """Every trial's hyperparameters and best searcher metric (parallel coordinates, scatter plots)."""
    return _json(request, models.hparams_view(master(request), _idx(request), exp_id))


@route(router, "GET", "/api/v1/ui/trials/{trial_id}")
async def trial_model(request: Request, trial_id: IdPath) -> Response:
    return _json(request, _builder(request, "trial", trial_id, {})())


@route(router, "GET", "/api/v1/ui/trials/{trial_id}/logs")
async def trial_logs(request: Request, trial_id: IdPath, tail: Tail = 1000, level: Word = None, q: Text = None
                     ) -> Response:
    """The last `tail` log lines at `level` or above containing `q`; follow on with /trials/{id}/logs?after_id."""
    return _json(request, trial_models.trial_logs(master(request), trial_id, tail=tail, level=level or "", q=q or ""))


@route(router, "GET", "/api/v1/ui/cluster")
async def cluster_model(request: Request) -> Response:
    return _json(request, _builder(request, "cluster", None, {})())


@route(router, "GET", "/api/v1/ui/status")
async def status(request: Request) -> Mapping[str, object]:
    """The metrics index: ready, rows folded, build time, memory."""
    idx: MetricsIndex | None = getattr(request.app.state, "metrics_index", None)
    return idx.status() if idx else {"ready": False}


def _still_allowed(request: Request) -> Callable[[], None]:
    """A check of the stream's caller, again before each model: a session revoked, a user deactivated or a role
    taken away since the stream opened ends it (with a `failure` event), as it would refuse the next call."""
    m, caller = master(request), request.state.identity
    spec = lookup("GET", "/api/v1/ui/events")
    query = dict(request.query_params)

    def check() -> None:
        authz.check_route(m, sessions.identity_of(m, caller.token_hash), spec, {}, query)

    return check


@route(router, "GET", "/api/v1/ui/events")
async def events(request: Request, page: Annotated[Page, Query()], id: IdQuery = None, interval: Interval = 1.0,
                 q: Text = None, state: Word = None, label: Text = None, owner: Text = None,
                 archived: Word = None, sort: Word = None, order: Word = None, limit: PageLimit = None,
                 offset: PageOffset = None, project: ProjectQuery = None) -> StreamingResponse:
    """Server-sent events: `model` with the page's JSON model whenever it changes (checked every `interval` s);
    the page's query values (q, state, ... offset, project) as its JSON model route takes them."""
    params = _given(q=q, state=state, label=label, owner=owner, archived=archived, sort=sort, order=order,
                    limit=limit, offset=offset, project=project)
    build = _builder(request, page, id, params)
    build()  # a missing id or a bad parameter answers 404/400 here, not inside the stream
    every = min(max(interval, 0.2), 10.0)
    still_allowed = _still_allowed(request)

    async def stream() -> AsyncIterator[str]:
        last, quiet = None, 0.0
        yield "retry: 2000\n\n"
        while True:
            try:
                still_allowed()
                body = json.dumps(build(), separators=(",", ":"), allow_nan=False, default=str)
            except StalwartError as err:
                yield "event: failure\ndata: " + json.dumps(err.to_dict()) + "\n\n"
                return
            if body != last:
                last, quiet = body, 0.0
                yield "event: model\ndata: " + body + "\n\n"
            elif quiet >= 15:
                quiet = 0.0
                yield ": keep-alive\n\n"
            await asyncio.sleep(every)
            quiet += every
            if await request.is_disconnected():
                return

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
