"""The web UI's JSON page models (ETag'd) and their live updates over server-sent events: the experiments list,
an experiment, its hyperparameters, a trial and its logs, the cluster, and the metrics index's status.

Each model is the one its page embeds (ui/page_routes.py), built by ui/builders.py; the live stream checks its
caller again before each model, so a session revoked or a role taken away ends it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse

from stalwart.api.errors import StalwartError
from stalwart.api.models.common import MAX_ID
from stalwart.api.models.ui import IndexStatus
from stalwart.api.routes_table import lookup
from stalwart.master.identity import authz, sessions
from stalwart.master.routes.common import IdPath, master
from stalwart.master.routes.contract import route
from stalwart.master.series.index import MetricsIndex
from stalwart.master.ui import hparams_models, trial_models
from stalwart.master.ui.builders import Page, builder, metrics_index

router = APIRouter(tags=["ui"])

# typed query values of the page models; None: the page's default
Text = Annotated[str | None, Query(max_length=1000)]
Word = Annotated[str | None, Query(max_length=64)]
PageLimit = Annotated[int | None, Query(ge=1, le=1000, description="rows per page")]
PageOffset = Annotated[int | None, Query(ge=0, le=MAX_ID, description="rows to skip")]
IdQuery = Annotated[int | None, Query(ge=0, le=MAX_ID, description="the id of the experiment or trial page")]
Tail = Annotated[int, Query(ge=1, le=20000, description="the most lines to return, the newest")]
Interval = Annotated[float, Query(ge=0, le=3600, allow_inf_nan=False,
                                  description="seconds between checks for a new model (0.2..10)")]
ProjectQuery = Annotated[int | None, Query(ge=0, le=MAX_ID, description="only the experiments of this project")]


def _given(**values: Any) -> dict[str, Any]:
    """The page-model parameters given in the query (None: not given, the page's default applies)."""
    return {k: v for k, v in values.items() if v is not None}


def _json(request: Request, data: dict[str, Any]) -> Response:
    """A page model's answer, held to its route-table model (a wrong shape is an error, never a wrong answer),
    encoded once as it was built, with an ETag: the page's next poll of an unchanged model is a 304."""
    model = lookup(request.method, request.scope["route"].path).response
    if model is None:
        raise LookupError(f"{request.method} {request.scope['route'].path}: a page model's route needs its model")
    model.model_validate(data)
    body = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


@route(router, "GET", "/api/v1/ui/experiments")
async def experiments_model(request: Request, q: Text = None, state: Word = None, label: Text = None,
                            owner: Text = None, archived: Word = None, sort: Word = None, order: Word = None,
                            limit: PageLimit = None, offset: PageOffset = None, project: ProjectQuery = None
                            ) -> Response:
    """Experiments filtered (q, state, label, owner, archived=true|false|all, project), sorted and paged
    server-side."""
    params = _given(q=q, state=state, label=label, owner=owner, archived=archived, sort=sort, order=order,
                    limit=limit, offset=offset, project=project)
    return _json(request, builder(request, "experiments", None, params)())


@route(router, "GET", "/api/v1/ui/experiments/{exp_id}")
async def experiment_model(request: Request, exp_id: IdPath, sort: Word = None, order: Word = None,
                           limit: PageLimit = None, offset: PageOffset = None) -> Response:
    """Experiment summary, config, searcher progress and one sorted page of its trials."""
    params = _given(sort=sort, order=order, limit=limit, offset=offset)
    return _json(request, builder(request, "experiment", exp_id, params)())


@route(router, "GET", "/api/v1/ui/experiments/{exp_id}/hparams")
async def hparams_model(request: Request, exp_id: IdPath) -> Response:
    """Every trial's hyperparameters and best searcher metric (parallel coordinates, scatter plots)."""
    return _json(request, hparams_models.hparams_view(master(request), metrics_index(request), exp_id))


@route(router, "GET", "/api/v1/ui/trials/{trial_id}")
async def trial_model(request: Request, trial_id: IdPath) -> Response:
    return _json(request, builder(request, "trial", trial_id, {})())


@route(router, "GET", "/api/v1/ui/trials/{trial_id}/logs")
async def trial_logs(request: Request, trial_id: IdPath, tail: Tail = 1000, level: Word = None, q: Text = None
                     ) -> Response:
    """The last `tail` log lines at `level` or above containing `q`; follow on with /trials/{id}/logs?after_id."""
    return _json(request, trial_models.trial_logs(master(request), trial_id, tail=tail, level=level or "", q=q or ""))


@route(router, "GET", "/api/v1/ui/cluster")
async def cluster_model(request: Request) -> Response:
    return _json(request, builder(request, "cluster", None, {})())


@route(router, "GET", "/api/v1/ui/status")
async def status(request: Request) -> IndexStatus:
    """The metrics index: ready, rows folded, build time, memory (only `ready` while there is no index)."""
    idx: MetricsIndex | None = getattr(request.app.state, "metrics_index", None)
    return IndexStatus.model_validate(idx.status()) if idx else IndexStatus(ready=False)


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
    build = builder(request, page, id, params)
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
