"""Single sign-on routes of the API (OpenID Connect, docs/sso.md): whether this master offers it, and the CLI's
trade of a one-time code for a session.

The browser's round trip through the provider (GET /oidc/login, GET /oidc/callback) is the web UI's (ui/sso.py):
a CLI login ends there with a one-time code, which the CLI trades, with its secret verifier, at
POST /api/v1/auth/oidc/token.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from stalwart.api.models.sso import SsoCodeExchange, SsoInfo
from stalwart.api.models.users import LoginAnswer
from stalwart.master.identity import audit, oidc
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route
from stalwart.master.routes.users import user_view

router = APIRouter(tags=["sso"])


@route(router, "GET", "/api/v1/auth/oidc")
async def oidc_info(request: Request) -> SsoInfo:
    """Whether this master offers single sign-on, and the provider's name."""
    cfg = master(request).settings.cluster.oidc
    return SsoInfo(enabled=cfg.enabled, provider=cfg.provider if cfg.enabled else None)


@route(router, "POST", "/api/v1/auth/oidc/token")
async def oidc_token(request: Request, payload: SsoCodeExchange) -> LoginAnswer:
    """A CLI's one-time code and verifier for a login session: `{token, user}` (as POST /api/v1/auth/login)."""
    audit.mark(request, None, "single sign-on")
    token, user = oidc.redeem(master(request), payload.code, payload.verifier)
    audit.mark(request, user["username"], f"user {user['username']}")
    return LoginAnswer(token=token, user=user_view(user))
