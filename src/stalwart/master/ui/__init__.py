"""The web UI: `install(app)` adds the pages, their JSON and live streams, the series API and HTML 404s."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from starlette.exceptions import HTTPException as StarletteHTTPException

from stalwart.master.ui.metrics_index import MetricsIndex


def install(app: FastAPI, *, build_index: bool = True) -> FastAPI:
    """Add the UI to a master app made by `create_app` (idempotent). Starts the metrics index build."""
    if getattr(app.state, "ui_installed", False):
        return app
    from stalwart.master.routes import series, ui
    from stalwart.master.ui import pages

    app.state.ui_installed = True
    m = app.state.master
    idx = MetricsIndex(m.db)
    app.state.metrics_index = idx
    if build_index:
        idx.start()
    app.include_router(series.router)
    app.include_router(ui.router)

    @app.exception_handler(StarletteHTTPException)
    async def html_not_found(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 404 and pages.wants_html(request):
            return pages.error_page(404, f"There is no page at {request.url.path}.")
        return await http_exception_handler(request, exc)

    return app
