"""Who may call what: the agents' cluster token and per-allocation tokens for trial processes."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import Request

from stalwart.api.errors import AuthError, ForbiddenError

ALLOCATION_HEADER = "x-allocation-token"


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def allocation_token(secret: str, allocation_id: str) -> str:
    """A token that proves its bearer runs inside `allocation_id` (derived, never stored)."""
    mac = hmac.new(secret.encode(), allocation_id.encode(), hashlib.sha256).hexdigest()
    return f"{allocation_id}.{mac}"


def _bearer(request: Request) -> str | None:
    for name in (ALLOCATION_HEADER, "grpc-metadata-x-allocation-token", "authorization"):
        value = request.headers.get(name)
        if value:
            return value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value
    return None


def require_cluster_token(request: Request, expected: str) -> None:
    got = _bearer(request)
    if got is None:
        raise AuthError("missing cluster token: start the agent with --token or STALWART_CLUSTER_TOKEN")
    if not hmac.compare_digest(got, expected):
        raise ForbiddenError("wrong cluster token: use the token printed in the master's home (cluster-token)")


def require_allocation(request: Request, secret: str) -> str:
    """Return the allocation id the caller's token belongs to, or refuse the call."""
    got = _bearer(request)
    if not got or "." not in got:
        raise AuthError("this call needs the trial's allocation token (STALWART_ALLOCATION_TOKEN)")
    allocation_id = got.rsplit(".", 1)[0]
    if not hmac.compare_digest(allocation_token(secret, allocation_id), got):
        raise ForbiddenError("invalid allocation token")
    return allocation_id
