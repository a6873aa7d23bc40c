"""Single sign-on for the CLI (`stalwart auth login`): whether a master offers it, where its login starts, and the
trade of the master's one-time code (plus this login's secret verifier) for a session.

A login starts with `new_verifier()`; the master hears only its challenge (base64url SHA-256), and hands the
browser a one-time code that works only with the verifier, so a code seen by anyone else is of no use to them.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import urlencode

from stalwart.api.models import sso, users
from stalwart.client.endpoints import Api, body, endpoint

INFO = endpoint("GET", "/api/v1/auth/oidc", sso.SsoInfo)
TOKEN = endpoint("POST", "/api/v1/auth/oidc/token", users.LoginAnswer, sso.SsoCodeExchange)
LOGIN_PAGE = "/oidc/login"  # an HTML route: the browser goes there, not this client


def new_verifier() -> str:
    """A fresh secret for one login (64 URL-safe characters)."""
    return secrets.token_urlsafe(48)


def challenge_of(verifier: str) -> str:
    """What the master is told of the verifier: base64url(SHA-256(verifier)), unpadded."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def login_url(master_url: str, verifier: str, *, port: int | None) -> str:
    """The page that starts a CLI's single sign-on: loopback (the code comes to 127.0.0.1:`port`) or, with no port,
    headless (the master shows the code)."""
    query = {"cli": "loopback" if port is not None else "headless", "challenge": challenge_of(verifier)}
    if port is not None:
        query["port"] = str(port)
    return master_url.rstrip("/") + LOGIN_PAGE + "?" + urlencode(query)


class SsoApi(Api):
    def sso_info(self) -> sso.SsoInfo:
        return self.call(INFO)

    def redeem_sso_code(self, code: str, verifier: str) -> users.LoginAnswer:
        """Trade the master's one-time code for a session; from now on this client carries it."""
        answer = self.call(TOKEN, json_body=body(sso.SsoCodeExchange, code=code, verifier=verifier))
        self.set_session_token(answer.token)
        return answer
