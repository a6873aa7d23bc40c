"""Single sign-on with OpenID Connect: the authorization code flow with PKCE, ID-token checks, and provisioning.

`begin` starts a login: a random `state`, `nonce` and PKCE verifier kept here, server-side, for ten minutes (one
master process, like the session cache), and the provider's authorization URL. `finish` takes the provider's answer
back: it exchanges the code (with the verifier), checks the ID token's signature against the provider's JWKS and its
issuer, audience, expiry and nonce (authlib's `CodeIDToken`), adds the userinfo claims, and provisions the user:
created on first login (`remote`, active, no password) when `auto_provision_users`, and its user-group memberships
set to exactly the groups its groups claim names (missing groups are created).

A CLI login (`stalwart auth login`) never gets a session token through the browser: `finish` gives it a one-time
code (five minutes) bound to a challenge (SHA-256 of a secret only the CLI holds), and `redeem` opens the session
for whoever presents both.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import httpx
from authlib.common.urls import add_params_to_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

from stalwart.api.errors import AuthError, ForbiddenError, InvalidRequest
from stalwart.config.master import OidcConfig
from stalwart.master.identity import sessions
from stalwart.master.queries import sso as q_sso, users as q_users, workspaces as wq
from stalwart.master.queries.rows import Row
from stalwart.master.service import Master

CALLBACK_PATH = "/oidc/callback"
PENDING_TTL_S = 600.0  # a login must come back from the provider within this
CODE_TTL_S = 300.0  # a CLI's one-time code must be redeemed within this
METADATA_TTL_S = 3600.0
_MAX_PENDING = 10_000
_HTTP_TIMEOUT_S = 10.0
USERNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*$")  # api/models/users.py's Username
MAX_USERNAME = 128
MAX_GROUP_NAME = 128


@dataclass(frozen=True)
class CliLogin:
    """A login for the CLI: `loopback` sends the browser to http://127.0.0.1:<port>/ with a one-time code; `headless`
    shows the code for the user to paste. `challenge` is base64url(SHA-256(the CLI's secret verifier))."""

    mode: str
    port: int | None
    challenge: str


@dataclass(frozen=True)
class Pending:
    nonce: str
    verifier: str
    next_path: str
    cli: CliLogin | None
    created_at: float


@dataclass(frozen=True)
class Finished:
    """What a finished login is: a web session (`token`), or a CLI's one-time code."""

    user: Row
    next_path: str
    token: str | None = None
    cli: CliLogin | None = None
    cli_code: str | None = None


@dataclass
class _Runtime:
    pending: dict[str, Pending] = field(default_factory=dict)
    codes: dict[str, tuple[int, str, float]] = field(default_factory=dict)  # code -> (user id, challenge, expiry)
    metadata: dict[str, Any] | None = None
    metadata_at: float = 0.0
    jwks: dict[str, Any] | None = None


_RUNTIMES: weakref.WeakKeyDictionary[Master, _Runtime] = weakref.WeakKeyDictionary()


def _runtime(m: Master) -> _Runtime:
    rt = _RUNTIMES.get(m)
    if rt is None:
        rt = _RUNTIMES[m] = _Runtime()
    return rt


def config(m: Master) -> OidcConfig:
    """The master's oidc settings; InvalidRequest (400) when single sign-on is off."""
    cfg = m.settings.cluster.oidc
    if not cfg.enabled:
        raise InvalidRequest("single sign-on is not enabled on this master: set oidc.enabled (with idp_sso_url, "
                             "idp_recipient_url and client_id) in the master config (docs/sso.md)")
    return cfg


def challenge_of(verifier: str) -> str:
    """The challenge of a CLI's verifier: base64url of its SHA-256, unpadded (as PKCE's S256)."""
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


# -- the provider -------------------------------------------------------------------------------
async def _metadata(m: Master, cfg: OidcConfig) -> dict[str, Any]:
    rt = _runtime(m)
    if rt.metadata is None or time.time() - rt.metadata_at > METADATA_TTL_S:
        url = cfg.issuer + "/.well-known/openid-configuration"
        data = await _get_json(url, "the provider's discovery document")
        for key in ("authorization_endpoint", "token_endpoint", "jwks_uri", "issuer"):
            if not isinstance(data.get(key), str):
                raise AuthError(f"the provider's discovery document ({url}) has no {key}: check oidc.idp_sso_url")
        if data["issuer"].rstrip("/") != cfg.issuer:
            raise AuthError(f"the provider says its issuer is {data['issuer']}, the master config says "
                            f"{cfg.issuer}: set oidc.idp_sso_url to the provider's issuer")
        rt.metadata, rt.metadata_at, rt.jwks = data, time.time(), None
    return rt.metadata


async def _get_json(url: str, what: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    try:
        async with httpx.AsyncClient(timeout=_HTTP_TIMEOUT_S) as http:
            res = await http.get(url, headers=headers)
    except httpx.HTTPError as err:
        raise AuthError(f"cannot reach the single sign-on provider for {what} ({url}): {err}") from None
    if res.status_code != 200:
        raise AuthError(f"the single sign-on provider answered {res.status_code} for {what} ({url})")
    try:
        data = res.json()
    except ValueError:
        raise AuthError(f"the single sign-on provider's {what} ({url}) is not JSON") from None
    if not isinstance(data, dict):
        raise AuthError(f"the single sign-on provider's {what} ({url}) is not a JSON object")
    return data


def _redirect_uri(cfg: OidcConfig) -> str:
    return cfg.master_url + CALLBACK_PATH


async def _exchange(cfg: OidcConfig, token_endpoint: str, code: str, verifier: str) -> dict[str, Any]:
    """The token endpoint's answer to the code (with the PKCE verifier; client_secret_basic for a confidential
    client, the client id alone for a public one)."""
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": _redirect_uri(cfg),
            "code_verifier": verifier}
    auth: dict[str, Any] = {}
    if cfg.client_secret:
        auth["auth"] = httpx.BasicAuth(cfg.client_id, cfg.client_secret)
    else:
        form["client_id"] = cfg.client_id
    try:
        async with httpx.AsyncClient(timeout=_HTTP_TIMEOUT_S) as http:
            res = await http.post(token_endpoint, data=form, headers={"Accept": "application/json"},
                                  **auth)
    except httpx.HTTPError as err:
        raise AuthError(f"cannot reach the single sign-on provider's token endpoint ({token_endpoint}): "
                        f"{err}") from None
    try:
        data = res.json()
    except ValueError:
        data = None
    if res.status_code != 200 or not isinstance(data, dict):
        why = (data.get("error_description") or data.get("error")) if isinstance(data, dict) else res.text[:200]
        raise AuthError(f"the single sign-on provider refused the login (HTTP {res.status_code}): {why}; check "
                        "oidc.client_id and oidc.client_secret")
    return data


# -- starting a login -------------------------------------------------------------------------
async def begin(m: Master, next_path: str, cli: CliLogin | None) -> tuple[str, str]:
    """Start a login: (the provider's authorization URL to send the browser to, the state it comes back with)."""
    cfg = config(m)
    meta = await _metadata(m, cfg)
    rt = _runtime(m)
    _expire(rt)
    if len(rt.pending) >= _MAX_PENDING:
        raise AuthError("too many single sign-on logins in progress: try again in a few minutes")
    state, nonce, verifier = secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(48)
    url = add_params_to_uri(meta["authorization_endpoint"], [
        ("response_type", "code"), ("client_id", cfg.client_id), ("redirect_uri", _redirect_uri(cfg)),
        ("scope", " ".join(cfg.scopes)), ("state", state), ("nonce", nonce),
        ("code_challenge", create_s256_code_challenge(verifier)), ("code_challenge_method", "S256")])
    rt.pending[state] = Pending(nonce, verifier, next_path, cli, time.time())
    return url, state


def _expire(rt: _Runtime) -> None:
    now = time.time()
    for state in [s for s, p in rt.pending.items() if now - p.created_at > PENDING_TTL_S]:
        del rt.pending[state]
    for code in [c for c, (_u, _ch, exp) in rt.codes.items() if exp <= now]:
        del rt.codes[code]


# -- the provider's answer ----------------------------------------------------------------------
async def finish(m: Master, state: str, code: str, browser_state: str | None) -> Finished:
    """Complete a login from the provider's redirect: check it, provision the user, open its session (web) or make
    the CLI's one-time code. AuthError (401) for anything that does not check out, ForbiddenError for a user who
    may not sign in."""
    cfg = config(m)
    rt = _runtime(m)
    _expire(rt)
    if browser_state is None or not hmac.compare_digest(browser_state, state):
        raise AuthError("this single sign-on login was started in another browser (or its cookie expired): sign in "
                        "again from this one")
    pending = rt.pending.pop(state, None)
    if pending is None:
        raise AuthError("this single sign-on login is unknown or expired (over 10 minutes, or the master restarted): "
                        "sign in again")
    claims = await _claims(m, cfg, code, pending)
    user = _provision(m, cfg, claims)
    if pending.cli is not None:
        one_time = secrets.token_urlsafe(24)
        rt.codes[one_time] = (int(user["id"]), pending.cli.challenge, time.time() + CODE_TTL_S)
        return Finished(user, pending.next_path, cli=pending.cli, cli_code=one_time)
    return Finished(user, pending.next_path, token=_open_login_session(m, int(user["id"])))


async def _claims(m: Master, cfg: OidcConfig, code: str, pending: Pending) -> dict[str, Any]:
    meta = await _metadata(m, cfg)
    token = await _exchange(cfg, meta["token_endpoint"], code, pending.verifier)
    id_token = token.get("id_token")
    if not isinstance(id_token, str):
        raise AuthError("the single sign-on provider sent no ID token: check that oidc.scopes includes openid")
    claims = await _check_id_token(m, cfg, meta, id_token, token, pending.nonce)
    wanted = (cfg.authentication_claim, cfg.groups_claim)
    if any(k not in claims for k in wanted) and isinstance(meta.get("userinfo_endpoint"), str):
        info = await _get_json(meta["userinfo_endpoint"], "userinfo",
                               headers={"Authorization": f"Bearer {token.get('access_token', '')}"})
        if info.get("sub") != claims.get("sub"):
            raise AuthError("the single sign-on provider's userinfo names another subject than its ID token")
        claims = {**info, **claims}
    return claims


async def _check_id_token(m: Master, cfg: OidcConfig, meta: dict[str, Any], id_token: str, token: dict[str, Any],
                          nonce: str) -> dict[str, Any]:
    algorithms = meta.get("id_token_signing_alg_values_supported") or ["RS256"]
    registry = JWSRegistry(algorithms=[a for a in algorithms if a != "none"], strict_check_header=False)
    rt = _runtime(m)
    try:
        try:
            if rt.jwks is None:
                rt.jwks = await _get_json(meta["jwks_uri"], "signing keys (JWKS)")
            # joserfc types `key` as one Key or a callable, yet takes a KeySet (it picks the key by the token's kid)
            decoded = jwt.decode(id_token, KeySet.import_key_set(rt.jwks), registry=registry)  # type: ignore[arg-type]
        except InvalidKeyIdError:  # the provider rotated its keys
            rt.jwks = await _get_json(meta["jwks_uri"], "signing keys (JWKS)")
            decoded = jwt.decode(id_token, KeySet.import_key_set(rt.jwks), registry=registry)  # type: ignore[arg-type]  # as above
        checked = CodeIDToken(decoded.claims, decoded.header,
                              {"iss": {"essential": True, "values": [meta["issuer"]]}},
                              {"nonce": nonce, "client_id": cfg.client_id, "access_token": token.get("access_token")})
        checked.validate(leeway=120)
    except (JoseError, ValueError) as err:
        raise AuthError(f"the single sign-on provider's ID token does not check out: {err}") from None
    except Exception as err:  # authlib's claim errors (issuer, audience, expiry, nonce)
        raise AuthError(f"the single sign-on provider's ID token does not check out: {err}") from None
    return dict(checked)


# -- provisioning -------------------------------------------------------------------------------
def _username(cfg: OidcConfig, claims: dict[str, Any]) -> str:
    name = claims.get(cfg.authentication_claim)
    if not isinstance(name, str) or not name:
        raise AuthError(f"the single sign-on provider's answer has no {cfg.authentication_claim!r} claim (the "
                        "user name, oidc.authentication_claim): ask the provider to release it, or pick another")
    if len(name) > MAX_USERNAME or not USERNAME.match(name):
        raise AuthError(f"the {cfg.authentication_claim!r} claim {name[:60]!r} is no valid Stalwart user name "
                        f"(letters, digits, _ . @ -; at most {MAX_USERNAME}): set oidc.authentication_claim to "
                        "another claim")
    return name


def _groups(cfg: OidcConfig, claims: dict[str, Any]) -> list[str] | None:
    """The group names the claim lists (None when the provider sent no such claim: memberships stay as they are)."""
    value = claims.get(cfg.groups_claim)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return sorted({g.strip() for g in value if isinstance(g, str) and g.strip() and len(g.strip()) <= MAX_GROUP_NAME})


def _provision(m: Master, cfg: OidcConfig, claims: dict[str, Any]) -> Row:
    username = _username(cfg, claims)
    display = claims.get(cfg.display_name_claim) if cfg.display_name_claim else None
    groups = _groups(cfg, claims)
    now = time.time()
    with m.db.begin() as conn:
        user = q_users.by_name(conn, username)
        if user is None:
            if not cfg.auto_provision_users:
                raise ForbiddenError(f"user {username} does not exist on this master and oidc.auto_provision_users "
                                     f"is off: an admin can create it (`stalwart user create {username}`)")
            q_sso.insert_remote_user(conn, username=username, created_at=now,
                                     display_name=display[:128] if isinstance(display, str) and display else None)
            user = q_users.by_name(conn, username)
            assert user is not None
        if not user["active"]:
            raise ForbiddenError(f"user {username} is not active: an admin can activate it "
                                 f"(`stalwart user activate {username}`)")
        if groups is not None:
            ids = q_sso.group_ids(conn, groups)
            for name in groups:
                if name not in ids:
                    ids[name] = wq.insert_group(conn, name, now)
            q_sso.set_memberships(conn, int(user["id"]), ids.values())
        q_users.update_user(conn, user["id"], last_auth_at=now)
        user = q_users.by_name(conn, username)
    assert user is not None
    sessions.forget_all(m)
    return user


def _open_login_session(m: Master, user_id: int) -> str:
    with m.db.begin() as conn:
        token, _ = sessions.open_session(conn, user_id, "login", lifespan=sessions.LOGIN_LIFESPAN_S,
                                         description="single sign-on")
    return token


# -- the CLI's one-time code --------------------------------------------------------------------
def redeem(m: Master, code: str, verifier: str) -> tuple[str, Row]:
    """Trade a CLI's one-time code and its verifier for a login session: (token, user). Each code works once."""
    rt = _runtime(m)
    _expire(rt)
    entry = rt.codes.pop(code, None)
    if entry is None:
        raise AuthError("unknown, used or expired single sign-on code (codes work once, for 5 minutes): run "
                        "`stalwart auth login` again")
    user_id, challenge, _expiry = entry
    if not hmac.compare_digest(challenge_of(verifier), challenge):
        raise AuthError("this single sign-on code was issued to another login: run `stalwart auth login` again")
    with m.db.begin() as conn:
        user = q_sso.user_by_id(conn, user_id)
    if user is None or not user["active"]:
        raise ForbiddenError("this user is no longer active: an admin can activate it (`stalwart user activate`)")
    return _open_login_session(m, user_id), user
