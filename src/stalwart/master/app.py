"""The ASGI app: wires routes, the web UI, error handling and the background loops (scheduler, metrics writer)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

import stalwart
from stalwart.api.errors import InvalidRequest, StalwartError
from stalwart.master import offload, ui
from stalwart.master.body_limit import BodyLimit
from stalwart.master.experiments.intake import MetricsWriter
from stalwart.master.routes import (
    agents, allocations, checkpoints, cluster, contract, experiments, jobs, searcher, tasks, trials,
)
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings

log = logging.getLogger(__name__)


def create_app(settings: MasterSettings) -> FastAPI:
    m = Master(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        writer = MetricsWriter(m)
        app.state.metrics_writer = writer
        ui.start(app)
        tasks = [asyncio.create_task(scheduling.run_forever(m)), asyncio.create_task(writer.run_forever())]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            for search in list(m.custom_searchers.values()):
                search.close()
            offload.shutdown()
            m.db.dispose()

    # /docs/rest-api/ is served by the UI (routes/ui.py) with a vendored Swagger UI, not FastAPI's CDN copy
    app = FastAPI(title="Stalwart master", version=stalwart.__version__, lifespan=lifespan,
                  docs_url=None, openapi_url="/api/v1/openapi.json")
    app.state.master = m
    app.add_middleware(BodyLimit, max_bytes=settings.cluster.limits.max_request_body)

    @app.exception_handler(StalwartError)
    async def stalwart_error(_req: Request, err: StalwartError) -> JSONResponse:
        return JSONResponse(err.to_dict(), status_code=err.http_status)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_req: Request, err: RequestValidationError) -> JSONResponse:
        details = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()]
        shown = "; ".join(details[:3]) + (f" (and {len(details) - 3} more)" if len(details) > 3 else "")
        bad = InvalidRequest(f"invalid request: {shown}", details=details)
        return JSONResponse(bad.to_dict(), status_code=bad.http_status)

    @app.exception_handler(Exception)
    async def unexpected(_req: Request, err: Exception) -> JSONResponse:
        log.exception("internal error")
        return JSONResponse(StalwartError(f"internal master error: {err}").to_dict(), status_code=500)

    for module in (cluster, experiments, trials, allocations, agents, checkpoints, searcher, jobs, tasks):
        app.include_router(module.router)
    ui.install(app)
    app.openapi = lambda: contract.openapi_document(app)  # type: ignore[method-assign]
    return app
