"""Sessions: who is calling. Login sessions, access tokens and the owner sessions of tasks are one table.

A session is a random token the caller presents (`Authorization: Bearer ...`, or the web UI's cookie);
only its SHA-256 is stored. Each request's check reads an in-memory cache of live sessions (a dict lookup)
and the database only on a miss; every change to users or sessions clears the cache, so a revoked token
or a deactivated user is refused from the next request on. (One master process; a second one would need a
shared invalidation, see ARCHITECTURE.md.)

The web UI's cookie session also carries a CSRF token (`csrf_token`): calls that change something with the
cookie must echo it in the `X-CSRF-Token` header; bearer-token calls carry no ambient credential and need none.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import urllib.parse

from fastapi import Request
from starlette.requests import HTTPConnection

from stalwart.api.errors import AuthError, ForbiddenError
from stalwart.master.identity import task_cookies
from stalwart.master.queries import users as q
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Identity as Identity, Master

LOGIN_LIFESPAN_S = 7 * 86400.0  # Determined's session length
TOKEN_LIFESPAN_S = 30 * 86400.0  # an access token's default
COOKIE = "stalwart_session"
CSRF_COOKIE = "stalwart_csrf"
CSRF_HEADER = "x-csrf-token"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_CACHE_MAX = 10_000


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def open_session(conn: Conn, user_id: int, kind: str, *, lifespan: float | None, description: str | None = None,
                 allocation_id: str | None = None) -> tuple[str, int]:
    """A new session of `user_id`: (its token, shown only now; its id)."""
    token = secrets.token_urlsafe(32)
    now = time.time()
    session_id = q.insert_session(conn, user_id=user_id, token_hash=hash_token(token), kind=kind, created_at=now,
                                  expires_at=now + lifespan if lifespan else None, description=description,
                                  allocation_id=allocation_id)
    return token, session_id


def forget_all(m: Master) -> None:
    """Drop the caches of live sessions and role assignments: call after any change to users, sessions, groups
    or roles."""
    m.session_cache.clear()
    m.roles_cache.clear()


def _presented(request: HTTPConnection) -> tuple[str | None, bool]:
    """The token a request carries, and whether it came in the cookie."""
    value = request.headers.get("authorization")
    if value:
        scheme, _, token = value.partition(" ")
        return (token.strip() if scheme.lower() == "bearer" else value.strip()) or None, False
    cookie = request.cookies.get(COOKIE)
    return (cookie or None), bool(cookie)


def _session_of(m: Master, request: HTTPConnection) -> tuple[Identity, bool]:
    """The identity of the session or token a request carries, and whether it came in the cookie (401 if none)."""
    token, from_cookie = _presented(request)
    if token is None:
        raise AuthError("not logged in: run `stalwart user login`, or pass an access token "
                        "(Authorization: Bearer TOKEN)")
    return identity_of(m, hash_token(token)), from_cookie


def authenticate(m: Master, request: Request) -> Identity:
    """The caller's identity; AuthError (401) without a live session, ForbiddenError without CSRF proof."""
    ident, from_cookie = _session_of(m, request)
    if from_cookie and request.method not in _SAFE_METHODS:
        sent = request.headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(sent, csrf_token(m, ident.token_hash)):
            raise ForbiddenError("missing or wrong CSRF token: send the X-CSRF-Token header the web UI's "
                                 f"{CSRF_COOKIE} cookie holds")
    return ident


def authenticate_proxied(m: Master, request: HTTPConnection, *, websocket: bool) -> Identity:
    """The identity of a call to the task proxy (routes/proxy.py): a session cookie or an access token, as for any
    user route; a cookie-borne call that could change something (a method but GET, HEAD and OPTIONS, and every
    WebSocket) must come from a page of this master's own address (its `Origin`), in place of the CSRF header that
    a task's pages cannot send."""
    if on_proxy_host(m, request) and not request.headers.get("authorization"):
        ident, from_cookie = _task_cookie_identity(m, request), True
    else:
        ident, from_cookie = _session_of(m, request)
    changes = websocket or request.scope.get("method", "GET") not in _SAFE_METHODS
    if from_cookie and changes and not _same_origin(request):
        raise ForbiddenError("a call through the task proxy with the session cookie must come from this master's own "
                             "pages (its Origin header did not name this master)")
    return ident


def on_proxy_host(m: Master, request: HTTPConnection) -> bool:
    """Whether `request` came to the task proxy's own host name (the master config's `proxy_host`)."""
    proxy_host = m.settings.cluster.proxy_host
    return bool(proxy_host) and request.headers.get("host", "").lower() == str(proxy_host).lower()


def proxied_task_id(path: str) -> str:
    """The task id of a path under the task proxy (`/proxy/<task id>/...`)."""
    return path.removeprefix("/proxy/").partition("/")[0]


def _task_cookie_identity(m: Master, request: HTTPConnection) -> Identity:
    """On the proxy host: the session a task cookie names, for the task of the request's path (401 otherwise)."""
    value = request.cookies.get(task_cookies.COOKIE)
    if not value:
        raise AuthError("not signed in to this task: open it from the master's own address (its link there brings you "
                        "here signed in), or pass an access token (Authorization: Bearer TOKEN)")
    task_id = proxied_task_id(request.scope["path"])
    return identity_of(m, task_cookies.read(m.secret, "cookie", value, task_id).token_hash)


def _same_origin(request: HTTPConnection) -> bool:
    origin = request.headers.get("origin")
    if not origin:
        return False
    return urllib.parse.urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


def identity_of(m: Master, token_hash: str) -> Identity:
    cache = m.session_cache
    ident = cache.get(token_hash)
    if ident is None:
        with m.db.begin() as conn:
            row = q.live_session(conn, token_hash)
        if row is None or not row["active"]:
            raise AuthError("invalid or revoked session: log in again (`stalwart user login`)")
        ident = Identity(row["user_id"], row["username"], bool(row["admin"]), row["id"], row["kind"],
                         row["expires_at"], token_hash)
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[token_hash] = ident
    if ident.expires_at is not None and ident.expires_at <= time.time():
        cache.pop(token_hash, None)
        raise AuthError("session expired: log in again (`stalwart user login`)")
    return ident


def csrf_token(m: Master, token_hash: str) -> str:
    """The CSRF token of one cookie session (derived from it, never stored)."""
    return hmac.new(m.secret.encode(), b"csrf:" + token_hash.encode(), hashlib.sha256).hexdigest()


def end_session(m: Master, session_id: int) -> None:
    with m.db.begin() as conn:
        q.revoke_session(conn, session_id, time.time())
    forget_all(m)


def task_token(m: Master, allocation_id: str) -> str:
    """The token of the owner session the tasks of `allocation_id` get (derived from the allocation, never stored)."""
    return hmac.new(m.secret.encode(), b"task-session:" + allocation_id.encode(), hashlib.sha256).hexdigest()


def task_session(m: Master, conn: Conn, owner: str, allocation_id: str) -> str | None:
    """The session of `owner` given to the tasks of one allocation (ended with it); None when the owner has no
    active account (the task then gets no user session). Its token is derived from the allocation, so a start
    order sent again carries the same one, and the row is stored once."""
    user = q.by_name(conn, owner)
    if user is None or not user["active"]:
        return None
    token = task_token(m, allocation_id)
    stored = q.session_by_hash(conn, hash_token(token))
    if stored is None:
        q.insert_session(conn, user_id=user["id"], token_hash=hash_token(token), kind="task", created_at=time.time(),
                         expires_at=None, allocation_id=allocation_id)
    elif stored["revoked_at"] is not None:
        return None  # revoked while the allocation lived (its owner was deactivated): it stays revoked
    return token


def end_task_sessions(m: Master, conn: Conn, allocation_id: str) -> None:
    if q.revoke_allocation_sessions(conn, allocation_id, time.time()):
        forget_all(m)
