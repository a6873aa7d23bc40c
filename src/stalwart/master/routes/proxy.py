"""/proxy/{task_id}/...: HTTP and WebSocket traffic to a task's service (a notebook, a TensorBoard, a shell's
tunnel), wherever its agent runs, so that a user needs only the master's address.

These routes are the route table's `proxy` kind (api/auth_kinds.py): the caller is a user, by session cookie or
access token; `proxy.target` decides who may open which task, and `proxy.headers` what crosses. A cookie-borne
call that could change something (any method but GET, HEAD and OPTIONS, and every WebSocket) must come from a page
of this master's own address (its `Origin`): the service's own cross-site checks cannot be relied on, as the
proxy authenticates to the service for the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, WebSocket
from fastapi.routing import APIRoute
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from stalwart.api.errors import StalwartError
from stalwart.api.routes_table import PROXY_METHODS, PROXY_PATH, lookup
from stalwart.master.identity import sessions
from stalwart.master.proxy import forward, target, tcp_tunnel, upstream, websocket
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import responses
from stalwart.master.service import Master
from stalwart.master.tasks import idle


class ProxyRoute(APIRoute):
    """A task proxy route: its endpoint is called with the request and the path's parameters alone, without
    FastAPI's dependency solving and body parsing (the proxy's parameters are the path's strings, and its body
    is the service's to read), and answers with a `Forwarded` that speaks ASGI itself (bench/RESULTS.md, B15)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            answer: Response = await endpoint(request, **request.path_params)
            return answer

        return handler


class Forwarded(Response):
    """The service's answer, streamed to the caller as it comes (proxy/forward.py)."""

    def __init__(self, pool: upstream.Pool, found: target.Target) -> None:  # no body or headers of its own
        self.pool = pool
        self.found = found
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self.found
        await forward.forward(self.pool, scope, receive, send, (found.host, found.port), found.service_token,
                              found.task_id)


def _pool(m: Master) -> upstream.Pool:
    """The master's connections to task services, made on first use."""
    if m.proxy_pool is None:
        m.proxy_pool = upstream.Pool()
    pool: upstream.Pool = m.proxy_pool
    return pool


router = APIRouter(tags=["proxy"], route_class=ProxyRoute)


RESOLVED_FOR_S = 2.0
"""How long a task's service, once found for a caller, is reused without asking the database again: a page's many
requests (a notebook loads hundreds of files) cost one lookup. The end of any task's allocation that served
clears them all (`allocations.lifecycle.allocation_exited`): a port a task had is never reached on its behalf after
it ended. A session ended within it is refused by `authenticate_proxied` first."""


def _resolve(m: Master, ident: sessions.Identity, task_id: str) -> target.Target:
    with m.db.begin() as conn:
        return target.resolve(m, conn, ident, task_id)


async def _found(m: Master, ident: sessions.Identity, task_id: str) -> target.Target:
    """The task's service for this caller: from the last few seconds' answers, else found (403/404/409 if not)."""
    key = (task_id, ident.username)
    hit = m.proxy_targets.get(key)
    if hit is not None and hit[0] > time.monotonic():
        cached: target.Target = hit[1]
        return cached
    found = await asyncio.to_thread(_resolve, m, ident, task_id)
    if len(m.proxy_targets) > 10_000:
        m.proxy_targets.clear()
    m.proxy_targets[key] = (time.monotonic() + RESOLVED_FOR_S, found)
    return found


async def proxy_http(request: Request, task_id: str, path: str) -> Response:
    """Forward the request to the task's service and stream its answer back."""
    m = master(request)
    ident = sessions.authenticate_proxied(m, request, websocket=False)
    found = await _found(m, ident, task_id)
    idle.note_traffic(m, found.task_id, found.allocation_id)
    return Forwarded(_pool(m), found)


async def proxy_websocket(ws: WebSocket, task_id: str, path: str) -> None:
    """Relay the WebSocket to the task's service; a caller who may not open it is refused at the handshake (403)."""
    m: Master = ws.app.state.master
    try:
        ident = sessions.authenticate_proxied(m, ws, websocket=True)
        found = await _found(m, ident, task_id)
    except StalwartError as err:
        await ws.close(code=1008, reason=str(err)[:120])  # before accept: the handshake is answered 403
        return
    url = "ws" + found.base_url.removeprefix("http") + forward.upstream_target(ws)
    idle.note_traffic(m, found.task_id, found.allocation_id)
    try:
        if target.parse(task_id)[0] == "shell":  # sshd speaks raw TCP: the WebSocket is its tunnel
            await tcp_tunnel.relay(ws, found.base_url, task_id)
            return
        await websocket.relay(ws, url, forward.outgoing_headers(ws, found.service_token), task_id)
    finally:
        idle.note_traffic(m, found.task_id, found.allocation_id)  # a long session counts until it closes


for _method in PROXY_METHODS:  # one route each, so that the document shows each method's own answers
    router.add_api_route(PROXY_PATH, proxy_http, methods=[_method], responses=responses(lookup(_method, PROXY_PATH)))
router.add_api_route(PROXY_PATH, proxy_http, methods=["HEAD"], include_in_schema=False)
router.add_api_websocket_route(PROXY_PATH, proxy_websocket)
