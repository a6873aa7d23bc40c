"""The web UI's routes: HTML pages, their JSON page models (ETag'd), live updates over SSE, static assets."""

from __future__ import annotations

import asyncio
import hashlib
import json

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import RedirectResponse, Response, StreamingResponse

from stalwart.api.errors import InvalidRequest, NotFoundError, StalwartError
from stalwart.master.routes.common import master
from stalwart.master.ui import models, pages, trial_models

router = APIRouter(include_in_schema=True, tags=["ui"])

LIST_PARAMS = {"q": str, "state": str, "label": str, "owner": str, "archived": str, "sort": str, "order": str,
               "limit": int, "offset": int}
EXP_PARAMS = {"sort": str, "order": str, "limit": int, "offset": int}


def _idx(request: Request):
    idx = getattr(request.app.state, "metrics_index", None)
    if idx is not None:
        idx.refresh()
    return idx


def _params(request: Request, spec: dict) -> dict:
    out = {}
    for name, kind in spec.items():
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            continue
        if kind is int:
            try:
                out[name] = int(raw)
            except ValueError:
                raise InvalidRequest(f"{name}: expected an integer, got {raw!r}") from None
        else:
            out[name] = raw
    return out


def _id(raw: str, what: str) -> int:
    if not raw.isdigit():
        raise NotFoundError(f"{what} {raw!r} not found: ids are whole numbers")
    return int(raw)


def _builder(request: Request, page: str, ident: str | None):
    """A function that builds the current model of `page` (validated now, so errors come before streaming)."""
    m = master(request)
    if page == "experiments":
        params = _params(request, LIST_PARAMS)
        return lambda: models.experiments_page(m, _idx(request), **params)
    if page == "cluster":
        return lambda: trial_models.cluster_page(m)
    if ident is None:
        raise InvalidRequest(f"id: required for page={page}")
    if page == "experiment":
        exp_id, params = _id(ident, "experiment"), _params(request, EXP_PARAMS)
        return lambda: models.experiment_page(m, _idx(request), exp_id, **params)
    if page == "trial":
        trial_id = _id(ident, "trial")
        return lambda: trial_models.trial_page(m, _idx(request), trial_id)
    raise InvalidRequest(f"page: expected experiments, experiment, trial or cluster, got {page!r}")


def _json(request: Request, data: dict) -> Response:
    body = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


# --- HTML pages -----------------------------------------------------------------------------------

def _page(request: Request, template: str, title: str, page: str, ident: str | None = None) -> Response:
    try:
        model = _builder(request, page, ident)() if page in ("experiments", "experiment", "trial", "cluster") else {}
    except StalwartError as err:
        return pages.error_page(err.http_status, err.message, err.details)
    preload: list[str] = []
    if page == "experiment":
        title = f"{model['experiment']['name']} · experiment {ident}"
        preload = [model["series_url"]]
    elif page == "trial":
        title = f"Trial {ident} · {model['experiment']['name']}"
        preload = [u for u in model["series_urls"].values() if u]
    return pages.render(template, title=title, page=page, model=model, ident=ident, entry=template.replace(".html", ".js"),
                        preload=preload)


@router.get("/", include_in_schema=False)
async def home(request: Request) -> Response:
    return _page(request, "experiments.html", "Experiments", "experiments")


@router.get("/experiments", include_in_schema=False)
async def experiments_list(request: Request) -> Response:
    return _page(request, "experiments.html", "Experiments", "experiments")


@router.get("/experiments/{exp_id}", include_in_schema=False)
async def experiment(request: Request, exp_id: str) -> Response:
    return _page(request, "experiment.html", "Experiment", "experiment", exp_id)


@router.get("/experiments/{exp_id}/trials/{trial_id}", include_in_schema=False)
async def experiment_trial(exp_id: str, trial_id: str) -> Response:
    """Determined's trial URL: the same trial page."""
    if not trial_id.isdigit():
        return pages.error_page(404, f"trial {trial_id!r} not found: ids are whole numbers")
    return RedirectResponse(f"/trials/{int(trial_id)}")


@router.get("/trials/{trial_id}", include_in_schema=False)
async def trial(request: Request, trial_id: str) -> Response:
    return _page(request, "trial.html", "Trial", "trial", trial_id)


@router.get("/cluster", include_in_schema=False)
async def cluster(request: Request) -> Response:
    return _page(request, "cluster.html", "Cluster", "cluster")


@router.get("/jobs", include_in_schema=False)
async def jobs(request: Request) -> Response:
    return _page(request, "jobs.html", "Job queue", "jobs")


@router.get("/tasks", include_in_schema=False)
async def tasks(request: Request) -> Response:
    return _page(request, "tasks.html", "Tasks", "tasks")


@router.get("/tasks/{task_id}", include_in_schema=False)
async def task(request: Request, task_id: str) -> Response:
    return _page(request, "tasks.html", f"Task {task_id}", "tasks", task_id)


@router.get("/docs/rest-api/", include_in_schema=False)
async def rest_api_docs(request: Request) -> Response:
    """Swagger UI for the master's OpenAPI spec, from the vendored copy (works with no internet access)."""
    base = f"/ui/static/{pages.VERSION}/{pages.SWAGGER_UI}"
    return get_swagger_ui_html(openapi_url=request.app.openapi_url, title=f"{request.app.title} · REST API",
                               swagger_js_url=f"{base}/swagger-ui-bundle.js", swagger_css_url=f"{base}/swagger-ui.css",
                               swagger_favicon_url=f"{base}/favicon-32x32.png")


@router.get("/ui/static/{version}/{path:path}", include_in_schema=False)
async def static(version: str, path: str) -> Response:
    return pages.static_file(path)


# --- JSON page models and live updates ------------------------------------------------------------

@router.get("/api/v1/ui/experiments")
async def experiments_model(request: Request) -> Response:
    """Experiments filtered (q, state, label, owner, archived=true|false|all), sorted and paged server-side."""
    return _json(request, _builder(request, "experiments", None)())


@router.get("/api/v1/ui/experiments/{exp_id}")
async def experiment_model(request: Request, exp_id: str) -> Response:
    """Experiment summary, config, searcher progress and one sorted page of its trials."""
    return _json(request, _builder(request, "experiment", exp_id)())


@router.get("/api/v1/ui/experiments/{exp_id}/hparams")
async def hparams_model(request: Request, exp_id: str) -> Response:
    """Every trial's hyperparameters and best searcher metric (parallel coordinates, scatter plots)."""
    return _json(request, models.hparams_view(master(request), _idx(request), _id(exp_id, "experiment")))


@router.get("/api/v1/ui/trials/{trial_id}")
async def trial_model(request: Request, trial_id: str) -> Response:
    return _json(request, _builder(request, "trial", trial_id)())


@router.get("/api/v1/ui/trials/{trial_id}/logs")
async def trial_logs(request: Request, trial_id: str, tail: int = 1000, level: str = "", q: str = "") -> Response:
    """The last `tail` log lines at `level` or above containing `q`; follow on with /trials/{id}/logs?after_id."""
    return _json(request, trial_models.trial_logs(master(request), _id(trial_id, "trial"), tail=tail, level=level,
                                                  q=q))


@router.get("/api/v1/ui/cluster")
async def cluster_model(request: Request) -> Response:
    return _json(request, trial_models.cluster_page(master(request)))


@router.get("/api/v1/ui/status")
async def status(request: Request) -> dict:
    """The metrics index: ready, rows folded, build time, memory."""
    idx = getattr(request.app.state, "metrics_index", None)
    return idx.status() if idx else {"ready": False}


@router.get("/api/v1/ui/events")
async def events(request: Request, page: str, id: str | None = None, interval: float = 1.0) -> StreamingResponse:
    """Server-sent events: `model` with the page's JSON model whenever it changes (checked every `interval` s)."""
    build = _builder(request, page, id)
    build()  # a missing id or a bad parameter answers 404/400 here, not inside the stream
    interval = min(max(interval, 0.2), 10.0)

    async def stream():
        last, quiet = None, 0.0
        yield "retry: 2000\n\n"
        while True:
            try:
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
            await asyncio.sleep(interval)
            quiet += interval
            if await request.is_disconnected():
                return

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
