"""What crosses the master's proxy, and what never does: the header rules of `/proxy/{task_id}/...`.

A task's service (a notebook, a TensorBoard, a shell's tunnel) runs its owner's code. It must never see the
master's own credentials, whatever the browser or the CLI sends with a proxied request: the `Authorization`
header (a user's token), the master's session cookie and its CSRF cookie are dropped on the way in, and the
service's own token (`identity.tokens.service_token`, which the browser never holds) is put in their place.
On the way out, a cookie the service sets under one of the master's cookie names is dropped, so a page served
by a task can never plant a session of its choosing in the visitor's browser. Hop-by-hop headers (RFC 9110
§7.6.1) are the two connections' own and cross in neither direction; so are a WebSocket handshake's.
"""

from __future__ import annotations

from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie

from stalwart.master.identity import sessions, task_cookies

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding",
    "upgrade",
})
MASTER_COOKIES = frozenset({sessions.COOKIE, sessions.CSRF_COOKIE, task_cookies.COOKIE})
NEVER_IN = HOP_BY_HOP | {"authorization", "cookie", "content-length", sessions.CSRF_HEADER}
"""Request headers not copied upstream as they are (cookies are copied less the master's own). `Host` is kept, as
reverse proxies keep it: a service that checks a request's `Origin` against its `Host` (Jupyter does) sees them
agree."""
NEVER_OUT = HOP_BY_HOP | {"set-cookie", "content-length"}
"""Answer headers not copied back as they are (cookies are copied less those under the master's names)."""
WEBSOCKET_OWN = frozenset({"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
                           "sec-websocket-protocol", "sec-websocket-accept"})
"""A WebSocket handshake's own headers: each leg of the relay negotiates its own."""


def request_headers(incoming: Iterable[tuple[str, str]], service_token: str | None, forwarded_for: str | None,
                    forwarded_proto: str, forwarded_host: str) -> list[tuple[str, str]]:
    """The headers the service receives for a request that came in with `incoming`."""
    out: list[tuple[str, str]] = []
    cookies: list[str] = []
    for name, value in incoming:
        lower = name.lower()
        if lower == "cookie":
            cookies.extend(_without_master_cookies(value))
        elif lower not in NEVER_IN and lower not in WEBSOCKET_OWN and not lower.startswith("x-forwarded-"):
            out.append((name, value))
    if cookies:
        out.append(("cookie", "; ".join(cookies)))
    if service_token:
        out.append(("authorization", f"token {service_token}"))
    if forwarded_for:
        out.append(("x-forwarded-for", forwarded_for))
    out += [("x-forwarded-proto", forwarded_proto), ("x-forwarded-host", forwarded_host)]
    return out


def answer_headers(upstream: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers the caller receives from the service's answer."""
    out: list[tuple[str, str]] = []
    for name, value in upstream:
        lower = name.lower()
        if lower == "set-cookie":
            if _cookie_name(value) not in MASTER_COOKIES:
                out.append((name, value))
        elif lower not in NEVER_OUT:
            out.append((name, value))
    return out


def _without_master_cookies(header: str) -> list[str]:
    """The `name=value` pairs of a Cookie header, less the master's own (kept as sent, in order)."""
    kept = []
    for pair in header.split(";"):
        name = pair.split("=", 1)[0].strip()
        if pair.strip() and name not in MASTER_COOKIES:
            kept.append(pair.strip())
    return kept


def _cookie_name(set_cookie: str) -> str:
    """The name a Set-Cookie header sets ('' when it cannot be read: then it is not one of ours either)."""
    try:
        parsed = SimpleCookie()
        parsed.load(set_cookie)
    except CookieError:
        return set_cookie.split("=", 1)[0].strip()
    names = list(parsed.keys())
    return names[0] if names else set_cookie.split("=", 1)[0].strip()
