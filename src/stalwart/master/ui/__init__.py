"""The web UI (docs/ui.md): `install(app)` adds the pages, their JSON and live streams, the series API and HTML 404s.

`create_app` calls `install` when it builds the master and `start` from its lifespan, which builds the
metrics index in a background thread (unless `MasterSettings.ui_metrics_index` is off).
"""

from __future__ import annotations

from fastapi import FastAPI, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from stalwart.master.errors import http_error
from stalwart.master.routes import series as series_routes, ui as ui_routes
from stalwart.master.ui import pages
from stalwart.master.ui.metrics_index import MetricsIndex


def install(app: FastAPI) -> FastAPI:
    """Add the UI to a master app made by `create_app` (idempotent)."""
    if getattr(app.state, "ui_installed", False):
        return app
    app.state.ui_installed = True
    app.state.metrics_index = MetricsIndex(app.state.master.db)
    app.include_router(series_routes.router)
    app.include_router(ui_routes.router)

    @app.exception_handler(StarletteHTTPException)
    async def html_not_found(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404 and pages.wants_html(request):
            return pages.error_page(404, f"There is no page at {request.url.path}.")
        return await http_error(request, exc)

    return app


def start(app: FastAPI) -> None:
    """At master start: build the metrics index in the background, if the settings ask for it."""
    idx = getattr(app.state, "metrics_index", None)
    if idx is not None and app.state.master.settings.ui_metrics_index:
        idx.start()
