"""The web UI's sign-in and sign-out: the login page, its form post, logout, and the redirect of pages without one.

POST /login checks the password (`identity.accounts.login`) and answers a 303 to the page asked for (`next`, a
path of this master only) with two cookies: the session (`sessions.COOKIE`: HttpOnly, SameSite=Lax) and its
CSRF token (`sessions.CSRF_COOKIE`: readable by the page's scripts, which echo it as `X-CSRF-Token` on every call
that changes something). A name or an address in back-off after failed logins gets the form again with a 429, its
Retry-After header and the wait in its message (identity/login_guard.py). POST /logout ends the session and clears
both. A page asked for without a session is answered by `login_redirect` (ui.install's error handler): a 303 to
/login?next=<the page>. Single sign-on's browser round trip (ui/sso.py) ends with the same cookies
(`set_session_cookies`).
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stalwart.api.errors import AuthError, ForbiddenError, TooManyRequests
from stalwart.master.identity import accounts, audit, login_guard, sessions
from stalwart.master.identity.passwords import MAX_PASSWORD
from stalwart.master.identity.sessions import Identity
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route
from stalwart.master.ui import pages

router = APIRouter(tags=["ui"])

FORM = "application/x-www-form-urlencoded"
MAX_NAME = 128


def safe_next(raw: str | None) -> str:
    """Where to go after signing in: a path on this master ("/" for anything else: no open redirects)."""
    if not raw or not raw.startswith("/") or raw.startswith("//") or "\\" in raw:
        return "/"
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        return "/"
    parts = urlsplit(raw)
    if parts.scheme or parts.netloc:
        return "/"
    return raw


def login_redirect(request: Request) -> Response:
    """A page asked for without a (live) session: to the login page, coming back here (GETs) afterwards.
    A stale session cookie is cleared on the way."""
    target = "/login"
    if request.method in ("GET", "HEAD"):
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if here != "/":
            target += "?next=" + quote(here, safe="/")
    response = RedirectResponse(target, status_code=303, headers=dict(pages.SECURITY_HEADERS))
    if request.cookies.get(sessions.COOKIE):
        _clear_cookies(request, response)
    return response


def _login_page(request: Request, next_path: str, *, error: str | None = None, username: str = "",
                status: int = 200) -> Response:
    oidc = master(request).settings.cluster.oidc
    return pages.render("login.html", title="Sign in", page="login", status=status, next_path=next_path,
                        error=error, username=username, sso_provider=oidc.provider if oidc.enabled else None)


@route(router, "GET", "/login")
async def login_page(request: Request) -> Response:
    """The sign-in form; `?next=` is the page to go to afterwards (a path on this master)."""
    return _login_page(request, safe_next(request.query_params.get("next")))


async def _form(request: Request) -> dict[str, str]:
    """The fields of a form post (each one's first value); an empty dict when the body is no form."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != FORM:
        return {}
    body = (await request.body()).decode("utf-8", errors="replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


def _bad_form(username: str, password: str) -> str | None:
    """What is wrong with the form's fields (None: nothing)."""
    if not username:
        return "user name: required"
    if len(username) > MAX_NAME:
        return f"user name: at most {MAX_NAME} characters"
    if len(password) > MAX_PASSWORD:
        return f"password: at most {MAX_PASSWORD} characters"
    return None


@route(router, "POST", "/login")
async def login(request: Request) -> Response:
    """The sign-in form's post (username, password, next): a 303 to `next` with the session cookies, or the form
    again with the reason (401 wrong name or password, 403 an inactive user, 400 a form without a user name or
    with a password too long, 429 in back-off after failed logins: wait the Retry-After header's seconds)."""
    form = await _form(request)
    next_path = safe_next(form.get("next"))
    username = form.get("username", "").strip()
    password = form.get("password", "")
    why = _bad_form(username, password)
    if why is not None:
        return _login_page(request, next_path, error=f"{why} (post the form's username and password fields)",
                           username=username[:MAX_NAME], status=400)
    audit.mark(request, username, f"user {username}")
    try:
        token, _user = await accounts.login(master(request), username, password, is_hashed=False,
                                            client=login_guard.client_address(request))
    except (AuthError, ForbiddenError, TooManyRequests) as err:
        page = _login_page(request, next_path, error=err.message, username=username, status=err.http_status)
        if isinstance(err, TooManyRequests):
            page.headers["Retry-After"] = str(err.retry_after_s)
        return page
    response = RedirectResponse(next_path, status_code=303, headers=dict(pages.SECURITY_HEADERS))
    set_session_cookies(request, response, token)
    return response


def set_session_cookies(request: Request, response: Response, token: str) -> None:
    """Give the browser a login session: its cookie (HttpOnly) and its CSRF token's (readable by the page)."""
    secure = request.url.scheme == "https"
    lifespan = int(sessions.LOGIN_LIFESPAN_S)
    response.set_cookie(sessions.COOKIE, token, max_age=lifespan, path="/", httponly=True, samesite="lax",
                        secure=secure)
    csrf = sessions.csrf_token(master(request), sessions.hash_token(token))
    response.set_cookie(sessions.CSRF_COOKIE, csrf, max_age=lifespan, path="/", httponly=False, samesite="lax",
                        secure=secure)


@route(router, "POST", "/logout")
async def logout(request: Request) -> Response:
    """End this session (the page's script posts it with X-CSRF-Token) and clear its cookies; to the login page."""
    ident: Identity = request.state.identity
    if ident.kind == "login":
        sessions.end_session(master(request), ident.session_id)
    response = RedirectResponse("/login", status_code=303, headers=dict(pages.SECURITY_HEADERS))
    _clear_cookies(request, response)
    return response


def _clear_cookies(request: Request, response: Response) -> None:
    secure = request.url.scheme == "https"
    response.delete_cookie(sessions.COOKIE, path="/", httponly=True, samesite="lax", secure=secure)
    response.delete_cookie(sessions.CSRF_COOKIE, path="/", samesite="lax", secure=secure)
