"""The task proxy's own host name (`proxy_host` in the master config; docs/tasks.md, "A host of its own").

A notebook or a command serves pages that run script; on the master's own address they would run with the
visitor's session cookie. With `proxy_host` set, this ASGI middleware keeps task traffic and the master apart:

- On the proxy host only `/proxy/...` is served (anything else: 404), signed in by a task cookie
  (identity/task_cookies.py) that the browser sends nowhere but that task's path; the master's session cookie is
  never honoured there.
- On the master's host, a browser (the session cookie, no `Authorization` header) that opens `/proxy/<task>/...`
  is sent to the proxy host with a ticket (GET and HEAD; other methods and WebSockets: 403). API clients with an
  access token are served where they are: no page of theirs runs with anyone's cookies.
- `/proxy/<task>/_stalwart/enter?ticket=...&next=...` on the proxy host trades a ticket (once, within 60 s) for the
  task cookie and sends the browser on to `next`, a path of that same task.

Without `proxy_host` it passes everything through.
"""

from __future__ import annotations

import time
import urllib.parse

from starlette.requests import HTTPConnection, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from stalwart.api.errors import AuthError, ForbiddenError, NotFoundError, StalwartError
from stalwart.master.body_limit import answer_error
from stalwart.master.identity import sessions, task_cookies
from stalwart.master.service import Master

ENTER = "_stalwart/enter"
"""The path, under a task's, where the proxy host trades a ticket for the task cookie."""


class ProxyHost:
    """Splits the master's address from the task proxy's own host name (module docstring)."""

    def __init__(self, app: ASGIApp, master: Master) -> None:
        self.app = app
        self.master = master
        self.used: dict[str, float] = {}  # tickets traded already -> when they expire

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        host = self.master.settings.cluster.proxy_host
        if not host or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        try:
            if sessions.on_proxy_host(self.master, conn):
                await self._on_proxy_host(conn, scope, receive, send)
            elif scope["path"].startswith("/proxy/") and _browser(conn):
                await self._send_over(conn, scope, send, host)
            else:
                await self.app(scope, receive, send)
        except StalwartError as err:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": str(err)[:120]})
            else:
                await answer_error(send, err)

    async def _on_proxy_host(self, conn: HTTPConnection, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if not path.startswith("/proxy/"):
            raise NotFoundError(f"{conn.headers.get('host')} serves tasks only (/proxy/<task id>/...); the master's "
                                f"API and pages are at {self.master.settings.url}")
        task_id = sessions.proxied_task_id(path)
        if path == f"/proxy/{task_id}/{ENTER}" and scope["type"] == "http":
            await self._enter(conn, task_id, send)
            return
        await self.app(scope, receive, send)

    async def _send_over(self, conn: HTTPConnection, scope: Scope, send: Send, host: str) -> None:
        """A browser on the master's host: to the proxy host, with a ticket for its session (GET and HEAD only)."""
        if scope["type"] == "websocket" or scope["method"] not in ("GET", "HEAD"):
            raise ForbiddenError(f"tasks are opened at http(s)://{host}/proxy/... (the master config's proxy_host), "
                                 "not on the master's own address")
        ident = sessions.authenticate(self.master, Request(scope))
        task_id = sessions.proxied_task_id(scope["path"])
        ticket = task_cookies.make(self.master.secret, "ticket", ident.token_hash, task_id, task_cookies.TICKET_S)
        target = scope["path"] + (f"?{scope['query_string'].decode('latin-1')}" if scope["query_string"] else "")
        query = urllib.parse.urlencode({"ticket": ticket, "next": target})
        await _redirect(send, f"{scope['scheme']}://{host}/proxy/{task_id}/{ENTER}?{query}")

    async def _enter(self, conn: HTTPConnection, task_id: str, send: Send) -> None:
        ticket, target = conn.query_params.get("ticket", ""), conn.query_params.get("next", "")
        signed = task_cookies.read(self.master.secret, "ticket", ticket, task_id)
        now = time.time()
        self.used = {t: until for t, until in self.used.items() if until > now}
        if ticket in self.used:
            raise AuthError("this ticket was used already: open the task from the master's own address again")
        if not target.startswith(f"/proxy/{task_id}/") or "\\" in target:
            raise ForbiddenError(f"next: {target!r} is not a page of {task_id}")
        ident = sessions.identity_of(self.master, signed.token_hash)  # the session still lives
        self.used[ticket] = signed.expires_at
        lifespan = task_cookies.COOKIE_S
        if ident.expires_at is not None:
            lifespan = max(1.0, min(lifespan, ident.expires_at - now))
        value = task_cookies.make(self.master.secret, "cookie", signed.token_hash, task_id, lifespan)
        cookie = (f"{task_cookies.COOKIE}={value}; Path=/proxy/{task_id}/; Max-Age={int(lifespan)}; HttpOnly; "
                  f"SameSite=Lax{'; Secure' if conn.url.scheme == 'https' else ''}")
        await _redirect(send, target, [(b"set-cookie", cookie.encode("latin-1"))])


def _browser(conn: HTTPConnection) -> bool:
    """A call that carries the master's session cookie and no token of its own: a browser's."""
    return bool(conn.cookies.get(sessions.COOKIE)) and not conn.headers.get("authorization")


async def _redirect(send: Send, location: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": 302,
                "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0"),
                            (b"cache-control", b"no-store"), *(extra or [])]})
    await send({"type": "http.response.body", "body": b""})
