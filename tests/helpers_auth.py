"""Sessions for tests that talk to a master over HTTP: log in (the bootstrap `admin` has the empty password on a
loopback master) and carry the session as `Authorization: Bearer ...`, as the CLI and the SDK do."""

from __future__ import annotations

import httpx

ADMIN = "admin"
LOGIN = "/api/v1/auth/login"


def bearer(token: str) -> dict[str, str]:
    """The header a user's session or access token travels in."""
    return {"authorization": f"Bearer {token}"}


def log_in(http: httpx.Client, username: str = ADMIN, password: str = "") -> str:
    """A new session of `username` (a plain-text password; the master hashes it as Determined's CLI would)."""
    reply = http.post(LOGIN, json={"username": username, "password": password, "isHashed": False})
    assert reply.status_code == 200, f"logging in as {username}: {reply.status_code} {reply.text}"
    token: str = reply.json()["token"]
    return token


def as_user(http: httpx.Client, username: str = ADMIN, password: str = "") -> str:
    """Log `http` in as `username`: every later call it makes carries the session. The session's token."""
    token = log_in(http, username, password)
    http.headers.update(bearer(token))
    return token


def as_admin(http: httpx.Client) -> str:
    """Log `http` in as the bootstrap admin (a TestClient of `create_app(...)`, or an httpx client of a master)."""
    return as_user(http, ADMIN, "")
