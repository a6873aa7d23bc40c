"""The web UI (docs/ui.md), the master's top room: `install(app)` adds the pages (page_routes.py; the model
registry's in registry_pages.py), their JSON and live streams (model_routes.py), the series API (routes/series.py),
signing in and out (sign_in.py) and single sign-on's browser round trip (sso.py), and HTML answers for pages' errors:
a page asked for without a session redirects to the login page, any other error of a page (403 naming the
permission, 404) is an HTML page; the JSON API keeps its ErrorBody answers (401 stays 401). Nothing under
master/routes imports the UI.

`create_app` calls `install` when it builds the master and `start` from its lifespan, which builds the
metrics index in a background thread (unless `MasterSettings.ui_metrics_index` is off).
"""

from __future__ import annotations

from fastapi import FastAPI, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from stalwart.api.errors import AuthError, StalwartError
from stalwart.master.errors import http_error, stalwart_error
from stalwart.master.routes import series as series_routes
from stalwart.master.series.index import MetricsIndex
from stalwart.master.ui import model_routes, page_routes, pages, registry_pages, sign_in, sso, viewer


def install(app: FastAPI) -> FastAPI:
    """Add the UI to a master app made by `create_app` (idempotent)."""
    if getattr(app.state, "ui_installed", False):
        return app
    app.state.ui_installed = True
    app.state.metrics_index = MetricsIndex(app.state.master.db)
    app.include_router(series_routes.router)
    app.include_router(page_routes.router)
    app.include_router(model_routes.router)
    app.include_router(registry_pages.router)
    app.include_router(sign_in.router)
    app.include_router(sso.router)

    @app.exception_handler(StalwartError)
    async def page_errors(request: Request, exc: StalwartError) -> Response:
        if not pages.is_html_route(request):
            return await stalwart_error(request, exc)
        if isinstance(exc, AuthError):
            return sign_in.login_redirect(request)
        return pages.error_page(exc.http_status, exc.message, exc.details, viewer=viewer.viewer_of(request))

    @app.exception_handler(StarletteHTTPException)
    async def html_not_found(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404 and pages.wants_html(request):
            return pages.error_page(404, f"There is no page at {request.url.path}.", viewer=viewer.viewer_of(request))
        return await http_error(request, exc)

    return app


def start(app: FastAPI) -> None:
    """At master start: build the metrics index in the background, if the settings ask for it."""
    idx = getattr(app.state, "metrics_index", None)
    if idx is not None and app.state.master.settings.ui_metrics_index:
        idx.start()
