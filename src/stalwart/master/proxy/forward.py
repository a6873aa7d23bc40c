"""Forwarding one HTTP request to a task's service and streaming its answer back.

Both bodies stream: the request's is sent upstream as it arrives, the answer's is passed on chunk by chunk as
the service writes it (a 10 GB download or a server-sent event stream holds no more than a chunk in the
master). The path and query go upstream as they came, undecoded: each service is started with its base path
set to `/proxy/<task id>/`, so its own links keep working behind the master. One `httpx.AsyncClient` per master
keeps connections to services open between requests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from starlette.background import BackgroundTask
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response, StreamingResponse

from stalwart.api.errors import StalwartError
from stalwart.master.proxy import headers

CONNECT_TIMEOUT_S = 10.0
"""How long the master waits to reach a task's service before answering 502."""


class ServiceUnreachable(StalwartError):
    """The task's service did not answer (it has not started, it stopped, or its agent cannot be reached)."""

    http_status = 502


def new_client() -> httpx.AsyncClient:
    """The master's client for task services: no overall timeout (answers may stream for hours), a bounded
    connect, no redirects followed (the browser follows them, through the proxy), no environment proxies."""
    return httpx.AsyncClient(timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S), follow_redirects=False,
                             trust_env=False, limits=httpx.Limits(max_keepalive_connections=64))


def upstream_target(request: HTTPConnection) -> str:
    """The request's (or WebSocket's) path and query as they came (percent-encoding untouched)."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string") or b""
    return (raw + (b"?" + query if query else b"")).decode("latin-1")


def outgoing_headers(request: HTTPConnection, service_token: str | None) -> list[tuple[str, str]]:
    """The headers the service gets for `request` (a WebSocket's handshake too): `headers.request_headers`."""
    client = request.client
    scheme = {"ws": "http", "wss": "https"}.get(request.url.scheme, request.url.scheme)
    return headers.request_headers(request.headers.items(), service_token, client.host if client else None,
                                   scheme, request.headers.get("host", ""))


async def forward(client: httpx.AsyncClient, request: Request, base_url: str, service_token: str | None,
                  task_id: str) -> Response:
    """Send `request` to the service at `base_url` (`http://host:port`) and stream its answer back."""
    body: AsyncIterator[bytes] | None = None
    if request.method not in ("GET", "HEAD", "OPTIONS", "DELETE") or request.headers.get("content-length") or \
            request.headers.get("transfer-encoding"):
        body = request.stream()
    upstream = client.build_request(request.method, base_url + upstream_target(request),
                                    headers=outgoing_headers(request, service_token), content=body)
    try:
        answer = await client.send(upstream, stream=True)
    except httpx.TransportError as err:
        raise ServiceUnreachable(f"task {task_id}'s service at {base_url} does not answer ({type(err).__name__}); "
                                 f"it may have stopped: see `stalwart cmd logs {task_id.rpartition('-')[2]}`") from None
    return _streamed(answer)


def _streamed(answer: httpx.Response) -> Response:
    """The service's answer as the caller's: its status, its headers less the proxy's rules, its bytes as they
    come (still encoded as the service sent them, so its Content-Length holds)."""
    response = StreamingResponse(_passed_on(answer), status_code=answer.status_code,
                                 background=BackgroundTask(answer.aclose))
    response.raw_headers = [(k.encode("latin-1"), v.encode("latin-1"))
                            for k, v in headers.answer_headers(answer.headers.multi_items())]
    if "content-length" in answer.headers:
        response.raw_headers.append((b"content-length", answer.headers["content-length"].encode("latin-1")))
    return response


async def _passed_on(answer: httpx.Response) -> AsyncIterator[bytes]:
    """The answer's bytes as they arrive (gzip stays gzip)."""
    async for chunk in answer.aiter_raw():
        yield chunk
