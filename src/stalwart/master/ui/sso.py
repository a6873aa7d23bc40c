"""Single sign-on in the browser (OpenID Connect, docs/sso.md): its round trip through the provider, for a web
login and for a CLI's (`stalwart auth login`).

GET /oidc/login sends the browser to the provider (and marks it with a short-lived cookie holding the login's
`state`, so the answer is taken only from the browser that started it). GET /oidc/callback is where the provider
sends it back: a web login gets the session cookies (ui/sign_in.py) and a 303 to `next`; a CLI login
(`cli=loopback|headless`) gets a one-time code: a 303 to http://127.0.0.1:<port>/callback (loopback), or a page
showing it (headless). The CLI trades it, with its secret verifier, at POST /api/v1/auth/oidc/token (routes/oidc.py).
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stalwart.api.errors import AuthError, ForbiddenError, InvalidRequest
from stalwart.master.identity import oidc
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route
from stalwart.master.ui import pages
from stalwart.master.ui.sign_in import safe_next, set_session_cookies

router = APIRouter(tags=["sso"])

STATE_COOKIE = "stalwart_oidc_state"
_CHALLENGE = re.compile(r"^[A-Za-z0-9_-]{43}$")


def _cli_login(request: Request) -> oidc.CliLogin | None:
    """The CLI part of a login's query (`cli`, `port`, `challenge`), checked; None for a web login."""
    params = request.query_params
    mode = params.get("cli")
    if mode is None:
        return None
    if mode not in ("loopback", "headless"):
        raise InvalidRequest(f"cli: expected loopback or headless, got {mode[:40]!r}")
    challenge = params.get("challenge", "")
    if not _CHALLENGE.match(challenge):
        raise InvalidRequest("challenge: expected base64url(SHA-256(verifier)), 43 characters (what "
                             "`stalwart auth login` sends)")
    port = None
    if mode == "loopback":
        raw = params.get("port", "")
        if not raw.isdigit() or not 1024 <= int(raw) <= 65535:
            raise InvalidRequest(f"port: expected the CLI's loopback port (1024-65535), got {raw[:20]!r}")
        port = int(raw)
    return oidc.CliLogin(mode, port, challenge)


def _failed(err: AuthError | ForbiddenError | InvalidRequest) -> Response:
    return pages.error_page(err.http_status, f"Single sign-on failed: {err.message}")


@route(router, "GET", "/oidc/login")
async def oidc_login(request: Request) -> Response:
    """Start a single sign-on: a 303 to the provider. `next`: the page to land on; `cli`/`port`/`challenge`: a
    CLI's login (`stalwart auth login`)."""
    try:
        cli = _cli_login(request)
        url, state = await oidc.begin(master(request), safe_next(request.query_params.get("next")), cli)
    except (AuthError, ForbiddenError, InvalidRequest) as err:
        return _failed(err)
    response = RedirectResponse(url, status_code=303, headers=dict(pages.SECURITY_HEADERS))
    response.set_cookie(STATE_COOKIE, state, max_age=int(oidc.PENDING_TTL_S), path="/oidc", httponly=True,
                        samesite="lax", secure=request.url.scheme == "https")
    return response


@route(router, "GET", "/oidc/callback")
async def oidc_callback(request: Request) -> Response:
    """The provider's answer (`code` and `state`, or `error`): sign the user in (web) or hand the CLI its code."""
    params = request.query_params
    try:
        if params.get("error"):
            detail = params.get("error_description") or params["error"]
            raise AuthError(f"the provider answered {params['error']}: {detail[:300]}")
        if not params.get("code") or not params.get("state"):
            raise InvalidRequest("the provider's answer has no code or state: start again from the login page")
        done = await oidc.finish(master(request), params["state"], params["code"], request.cookies.get(STATE_COOKIE))
    except (AuthError, ForbiddenError, InvalidRequest) as err:
        response = _failed(err)
        response.delete_cookie(STATE_COOKIE, path="/oidc")
        return response
    if done.cli is None:
        assert done.token is not None
        response = RedirectResponse(done.next_path, status_code=303, headers=dict(pages.SECURITY_HEADERS))
        set_session_cookies(request, response, done.token)
    elif done.cli.mode == "loopback":
        target = f"http://127.0.0.1:{done.cli.port}/callback?" + urlencode({"code": done.cli_code})
        response = RedirectResponse(target, status_code=303, headers=dict(pages.SECURITY_HEADERS))
    else:
        response = pages.render("oidc_code.html", title="Single sign-on code", page="login", code=done.cli_code,
                                username=done.user["username"])
    response.delete_cookie(STATE_COOKIE, path="/oidc")
    return response
