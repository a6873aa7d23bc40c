"""The Determined listener's app: its routes, its errors in Determined's shape, the master's body limit and audit."""

from __future__ import annotations

from fastapi import FastAPI

from stalwart.master.body_limit import BodyLimit
from stalwart.master.determined_api import (
    auth_routes,
    checkpoint_routes,
    detached_routes,
    errors,
    experiment_routes,
    log_routes,
)
from stalwart.master.determined_api.listener import JsonWithoutContentType
from stalwart.master.identity.audit import AuditLog
from stalwart.master.service import Master

ROUTERS = (auth_routes.router, experiment_routes.router, log_routes.router, checkpoint_routes.router,
           detached_routes.router)


def create_determined_app(m: Master) -> FastAPI:
    """The app served on the `determined_api` port, sharing `m` (its database, sessions, signals) with the master's
    own app. No lifespan of its own: the master's app starts and stops everything both use."""
    app = FastAPI(title="Stalwart master: Determined 0.38.1's REST API", docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.master = m
    app.add_middleware(BodyLimit, max_bytes=m.settings.cluster.limits.max_request_body)
    app.add_middleware(AuditLog, master=m)
    errors.install(app)
    app.add_middleware(JsonWithoutContentType)  # the outermost: every layer under it sees the JSON type
    for router in ROUTERS:
        app.include_router(router)
    return app
