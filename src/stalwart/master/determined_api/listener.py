"""One server, two listeners: requests that reached the `determined_api` port go to Determined's app, the rest
to the master's own. Both apps share one process, one event loop and one `Master`; the master's app alone runs
the lifespan (the scheduler, the writers), so the second listener adds no second copy of anything."""

from __future__ import annotations

import socket

from starlette.types import ASGIApp, Receive, Scope, Send


class ByListener:
    """ASGI app: a connection accepted on `port` is served by `determined`, every other one by `own`."""

    def __init__(self, own: ASGIApp, determined: ASGIApp, port: int) -> None:
        self.own = own
        self.determined = determined
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if scope["type"] in ("http", "websocket") and server is not None and server[1] == self.port:
            await self.determined(scope, receive, send)
        else:
            await self.own(scope, receive, send)


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (IPv6 when host is one), as uvicorn binds its own; the server listens on it.
    OSError (with the address) when the port is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise OSError(err.errno, f"cannot listen on {host}:{port} ({err.strerror})") from None
    sock.set_inheritable(True)
    return sock


class JsonWithoutContentType:
    """ASGI middleware: a request with no Content-Type is JSON. Determined's client sends its bodies without the
    header (det-wire.md §0); FastAPI would read such a body as raw bytes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not any(name == b"content-type" for name, _ in scope["headers"]):
            scope = {**scope, "headers": [*scope["headers"], (b"content-type", b"application/json")]}
        await self.app(scope, receive, send)
