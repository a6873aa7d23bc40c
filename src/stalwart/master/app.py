"""The ASGI app: wires routes, the web UI, error handling and the background loops (scheduler, metrics writer)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.types import ASGIApp

import stalwart
from stalwart.master import errors, log_retention, offload, ui
from stalwart.master.body_limit import BodyLimit
from stalwart.master.determined_api.app import create_determined_app
from stalwart.master.determined_api.listener import ByListener
from stalwart.master.early_auth import EarlyAuth
from stalwart.master.experiments import searchers
from stalwart.master.experiments.intake import MetricsWriter
from stalwart.master.identity import accounts
from stalwart.master.identity.audit import AuditLog
from stalwart.master.proxy_host import ProxyHost
from stalwart.master.routes import (
    agents,
    allocations,
    checkpoints,
    cluster,
    contract,
    detached,
    elastic,
    experiments,
    jobs,
    models,
    notebooks,
    oidc,
    proxy,
    rbac,
    searcher,
    shells,
    tasks,
    templates,
    tensorboards,
    trials,
    users,
    webhooks,
    workspaces,
)
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.master.tasks import idle
from stalwart.master.webhooks import delivery
from stalwart.master.workspaces import people


def create_app(settings: MasterSettings) -> FastAPI:
    """The master's app. ConfigError when it must not start (an open account on a non-loopback address; basic
    mode by default while role assignments exist)."""
    m = Master(settings)
    accounts.bootstrap(m)
    accounts.refuse_open_accounts(m)
    people.refuse_silent_basic(m)  # no fall back to basic mode while role assignments exist

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        writer = MetricsWriter(m)
        app.state.metrics_writer = writer
        determined = getattr(app.state, "determined_app", None)
        if determined is not None:  # its metrics reports are group-committed by the same writer
            determined.state.metrics_writer = writer
        ui.start(app)
        # webhooks: sends what is due, also after a restart; idle: stops tasks idle past their idle_timeout;
        # log_retention: deletes trial logs past their retention
        tasks = [asyncio.create_task(scheduling.run_forever(m)), asyncio.create_task(writer.run_forever()),
                 asyncio.create_task(delivery.run_forever(m)), asyncio.create_task(idle.run_forever(m)),
                 asyncio.create_task(log_retention.run_forever(m))]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            searchers.close_all(m)
            offload.shutdown()
            if m.proxy_pool is not None:
                await m.proxy_pool.aclose()
            m.db.dispose()

    # /docs/rest-api/ is served by the UI (ui/page_routes.py) with a vendored Swagger UI; FastAPI's /docs and /redoc
    # pages load their scripts from a CDN (broken on an air-gapped cluster), so neither is served
    app = FastAPI(title="Stalwart master", version=stalwart.__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url="/api/v1/openapi.json")
    app.state.master = m
    app.add_middleware(BodyLimit, max_bytes=settings.cluster.limits.max_request_body)
    app.add_middleware(EarlyAuth, master=m)  # the caller, from the headers, before any body is read
    app.add_middleware(ProxyHost, master=m)  # with proxy_host set: task traffic on a host name of its own
    app.add_middleware(AuditLog, master=m)
    errors.install(app)  # error answers (ErrorBody, 400 for validation, 500 keeping the connection): master/errors.py

    # the proxy first: its pages' many requests are matched at once (it shares no path with the rest);
    # workspaces and detached before experiments: their POST /experiments/{id}/move and /{id}/trials must win over
    # experiments' /{id}/{action}
    for module in (proxy, cluster, workspaces, detached, experiments, trials, allocations, agents, checkpoints,
                   searcher, jobs, tasks, notebooks, tensorboards, users, oidc, rbac, models, webhooks, elastic,
                   templates, shells):
        app.include_router(module.router)
    ui.install(app)
    app.openapi = lambda: contract.openapi_document(app)  # type: ignore[method-assign]  # FastAPI's way to extend
    return app


def with_determined_listener(app: FastAPI, port: int) -> ASGIApp:
    """The app to serve when the master also listens for Determined's CLI and SDK on `port` (its own socket, the
    same server): connections accepted there get Determined's REST surface (master/determined_api)."""
    determined = create_determined_app(app.state.master)
    app.state.determined_app = determined  # the lifespan hands it what both share (the metrics writer)
    return ByListener(app, determined, port)
