"""The web UI's HTML pages: the experiments list, an experiment, a trial, the cluster, the job queue, tasks,
workspaces and projects, the audit log for admins, the REST API's docs, and the pages' static assets.

A page's errors are pages too (404 for an id that names nothing), and its query values are read leniently (an
empty one is left out), as the browser's address bar holds them. A page embeds its first model, the one its JSON
route answers (ui/model_routes.py), built by ui/builders.py.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import RedirectResponse, Response

from stalwart.api.errors import InvalidRequest, NotFoundError, StalwartError
from stalwart.api.models.common import MAX_ID, JsonObject
from stalwart.master.queries import users as user_queries
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route
from stalwart.master.ui import audit_view, pages, workspace_models
from stalwart.master.ui.builders import EXP_PARAMS, builder, may_view
from stalwart.master.ui.viewer import viewer_of

router = APIRouter(tags=["ui"])

HtmlId = Annotated[str, Path(description="an experiment, trial or task id")]
LIST_PARAMS = {"q": str, "state": str, "label": str, "owner": str, "archived": str, "sort": str, "order": str,
               "limit": int, "offset": int, "project": int}


def page_id(raw: str, what: str) -> int:
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


def _model(request: Request, page: str, ident: str | None) -> JsonObject:
    """The model a page embeds (an empty one for the pages that fetch theirs)."""
    if page == "experiments":
        return builder(request, "experiments", None, _query(request, LIST_PARAMS))()
    if page == "cluster":
        return builder(request, "cluster", None, {})()
    if page == "experiment" and ident is not None:
        return builder(request, "experiment", page_id(ident, page), _query(request, EXP_PARAMS))()
    if page == "trial" and ident is not None:
        return builder(request, "trial", page_id(ident, page), {})()
    if page == "project" and ident is not None:
        head = workspace_models.project_head(master(request), may_view(request), page_id(ident, page))
        params = {**_query(request, LIST_PARAMS), "project": head["id"]}
        return {**builder(request, "experiments", None, params)(), "project": head}
    return {}


def _page(request: Request, template: str, title: str, page: str, ident: str | None = None) -> Response:
    try:
        model = _model(request, page, ident)
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
        title = f"{model['project']['name']} · {model['project']['workspaceName']}"
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
    model = workspace_models.workspaces_page(master(request), may_view(request), archived=archived)
    return pages.render("workspaces.html", title="Workspaces", page="workspaces", viewer=viewer_of(request), **model)


@route(router, "GET", "/workspaces/{workspace_id}")
async def workspace_page(request: Request, workspace_id: HtmlId) -> Response:
    """One workspace: its projects, each with its experiments counted."""
    try:
        ws_id = page_id(workspace_id, "workspace")
        model = workspace_models.workspace_page(master(request), may_view(request), ws_id)
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
        return RedirectResponse(f"/trials/{page_id(trial_id, 'trial')}")
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
