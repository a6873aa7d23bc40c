"""Who is calling, known before any byte of a request's body is read (issue 25, hole 9).

FastAPI reads and parses a request's body before the route's dependencies run, so with the auth check only in
the dependency an unauthenticated caller makes the master hold a whole upload before its 401. `EarlyAuth`, a
pure ASGI middleware, finds the request's route-table entry from its method and path alone (`RouteMatcher`: a
dict, then one regular expression per method, built once from the table) and, for a request that may carry a
body (every method but GET, HEAD and OPTIONS):

- on a route of agents or trials, runs that route's own caller check (`routes.contract.require_cluster`,
  `require_allocation`, `require_cluster_or_allocation`); on a user route, `identity.sessions.authenticate` (an
  in-memory cache lookup); a caller either refuses gets its 401/403 ErrorBody at once, and the body is never
  read (uvicorn discards it as it arrives);
- on an open route (signing in), bounds the body to `OPEN_BODY_MAX` bytes, counted as it arrives (413 beyond).

The permission a user route names stays with the route's dependency, which runs these checks again (defence in
depth). Pages (HTML routes) are left to their dependency: their handlers read no body, and a page asked for
without a session answers a redirect to the login page rather than a 401.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable

from starlette.requests import Request
from starlette.routing import compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from stalwart.api.auth_kinds import AuthKind
from stalwart.api.errors import StalwartError
from stalwart.api.routes_table import HTML, ROUTES, RouteSpec
from stalwart.master.body_limit import RequestTooLarge, answer_error, bounded
from stalwart.master.identity import audit, authz, sessions, tokens
from stalwart.master.routes import contract
from stalwart.master.service import Master

OPEN_BODY_MAX = 64 * 1024
"""The most body bytes a request to an open route (signing in) may carry: the caller is not known yet."""
_READS = frozenset({"GET", "HEAD", "OPTIONS"})  # their routes take no body
_PARAM = re.compile(r"\{(\w+)(?::(\w+))?\}")

CallerCheck = Callable[[Request], Awaitable[None]]


def _pattern(template: str) -> str:
    """The regular expression (no capturing group) of a path template, as Starlette's router reads it."""
    out, last = [], 0
    for param in _PARAM.finditer(template):
        out.append(re.escape(template[last:param.start()]))
        out.append(".*" if param.group(2) == "path" else "[^/]+")
        last = param.end()
    out.append(re.escape(template[last:]))
    return "".join(out)


class RouteMatcher:
    """The route-table entry of a method and a request path: an exact path by dict, a templated one by one
    regular expression per method (the first template in table order that matches)."""

    def __init__(self, routes: Iterable[RouteSpec]) -> None:
        self._exact: dict[tuple[str, str], RouteSpec] = {}
        templated: dict[str, list[RouteSpec]] = {}
        for spec in routes:
            if "{" in spec.path:
                templated.setdefault(spec.method, []).append(spec)
            else:
                self._exact.setdefault(spec.key, spec)
        self._templated = {
            method: (re.compile("|".join(f"(?P<r{i}>{_pattern(s.path)})" for i, s in enumerate(specs))), specs)
            for method, specs in templated.items()}

    def match(self, method: str, path: str) -> RouteSpec | None:
        spec = self._exact.get((method, path))
        if spec is not None:
            return spec
        found = self._templated.get(method)
        if found is None:
            return None
        regex, specs = found
        hit = regex.fullmatch(path)
        return specs[int(hit.lastgroup[1:])] if hit is not None and hit.lastgroup else None


class EarlyAuth:
    """Pure ASGI middleware: the caller check of the request's route before its body is read (module docstring)."""

    def __init__(self, app: ASGIApp, master: Master, routes: Iterable[RouteSpec] = ROUTES) -> None:
        self.app = app
        self.master = master
        routes = list(routes)
        self.matcher = RouteMatcher(routes)
        self.checks = {spec.key: self._check_of(spec) for spec in routes}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _READS:
            await self.app(scope, receive, send)
            return
        spec = self.matcher.match(scope["method"], scope["path"])
        if spec is None:  # the router answers 404 or 405 and reads no body
            await self.app(scope, receive, send)
            return
        if spec.auth is AuthKind.OPEN and not spec.also_auth:
            await bounded(self.app, scope, receive, send, OPEN_BODY_MAX, lambda: _open_too_large(spec))
            return
        check = self.checks[spec.key]
        if check is not None:
            try:
                await check(Request(scope))  # no receive channel: a check that read the body would fail here
            except StalwartError as err:
                await answer_error(send, err)
                return
        await self.app(scope, receive, send)

    def _check_of(self, spec: RouteSpec) -> CallerCheck | None:
        """The caller check of one route, without its permission; None where the dependency alone checks."""
        kinds = frozenset({spec.auth, *spec.also_auth})
        if spec.content_type == HTML or kinds == {AuthKind.OPEN}:
            return None
        if kinds == {AuthKind.USER}:
            return self._user(spec)
        if kinds == {AuthKind.USER, AuthKind.ALLOCATION}:
            return self._user_or_allocation(spec)
        if kinds == {AuthKind.CLUSTER}:
            return contract.require_cluster
        if kinds == {AuthKind.ALLOCATION}:
            return contract.require_allocation
        if kinds == {AuthKind.CLUSTER, AuthKind.ALLOCATION}:
            return contract.require_cluster_or_allocation
        if kinds == {AuthKind.PROXY}:
            return self._proxied
        raise ValueError(f"{spec.method} {spec.path}: no early caller check for auth kinds "
                         f"{sorted(k.value for k in kinds)} (add one in master/early_auth.py, calling the check the "
                         "route's dependency in routes/contract.py uses)")

    def _user(self, spec: RouteSpec) -> CallerCheck:
        """A live session (401), and CSRF proof with a cookie (403); a refusal is audited as the dependency's is."""
        template = compile_path(spec.path)[0]

        async def check(request: Request) -> None:
            try:
                sessions.authenticate(self.master, request)
            except StalwartError:
                hit = template.match(request.scope["path"])
                audit.mark(request, None, authz.target_of(hit.groupdict() if hit is not None else {}))
                raise

        return check

    async def _proxied(self, request: Request) -> None:
        """A call through the task proxy: a user's session (the handler decides which tasks it may open)."""
        sessions.authenticate_proxied(self.master, request, websocket=False)

    def _user_or_allocation(self, spec: RouteSpec) -> CallerCheck:
        """A trial's allocation token where it presents one, else a user's session."""
        as_user = self._user(spec)

        async def check(request: Request) -> None:
            if request.headers.get(tokens.ALLOCATION_HEADER):
                await contract.require_allocation(request)
            else:
                await as_user(request)

        return check


def _open_too_large(spec: RouteSpec) -> RequestTooLarge:
    return RequestTooLarge(f"request body of {spec.method} {spec.path} is over {OPEN_BODY_MAX // 1024} KiB: a "
                           "call made before the caller is known (signing in) carries only a small body")
