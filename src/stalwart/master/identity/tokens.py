"""Tokens of the machines: the cluster token (enrollment only), agents' own credentials, allocation tokens.

The cluster token (`$STALWART_HOME/cluster-token`) only enrolls a new agent; each agent then presents the
credential the master gave it at enrollment (random, shown once; only its SHA-256 is stored). An allocation token
is `allocation_id.HMAC(secret, allocation_id)`: derived, never stored. The checks that need the database (whose
credential is this, is it revoked) are the cluster domain's (`cluster.credentials`); these are the pure parts.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets

from fastapi import Request

from stalwart.api.errors import AuthError, ForbiddenError

ALLOCATION_HEADER = "x-allocation-token"
CREDENTIAL_PREFIX = "agent-"
"""Agents' credentials start with this, so that a log line or a support ticket shows what kind of secret it is."""


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def new_agent_credential() -> str:
    """A fresh agent credential (shown once, to the agent enrolling)."""
    return CREDENTIAL_PREFIX + secrets.token_urlsafe(32)


def credential_hash(credential: str) -> str:
    """What the master keeps of an agent's credential."""
    return hashlib.sha256(credential.encode()).hexdigest()


def allocation_token(secret: str, allocation_id: str) -> str:
    """A token that proves its bearer runs inside `allocation_id` (derived, never stored)."""
    mac = hmac.new(secret.encode(), allocation_id.encode(), hashlib.sha256).hexdigest()
    return f"{allocation_id}.{mac}"


def service_token(secret: str, allocation_id: str) -> str:
    """The token the master's proxy sends to a task's service (`Authorization: token ...`) in place of the caller's
    credentials: derived, never stored, and never shown to a browser."""
    return hmac.new(secret.encode(), b"service:" + allocation_id.encode(), hashlib.sha256).hexdigest()


def bearer(request: Request) -> str | None:
    """The token a machine's request carries (allocation header first, then `Authorization: Bearer`); headers only,
    so it works on a request built from the ASGI scope before the body is read."""
    for name in (ALLOCATION_HEADER, "grpc-metadata-x-allocation-token", "authorization"):
        value = request.headers.get(name)
        if value:
            return value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value
    return None


def is_cluster_token(presented: str, expected: str) -> bool:
    """Whether `presented` is the cluster token (compared in constant time)."""
    return hmac.compare_digest(presented.encode(), expected.encode())


def is_loopback(host: str | None) -> bool:
    """Whether a peer address is this machine's own (127.0.0.0/8, ::1, or an IPv4-mapped loopback address)."""
    try:
        address = ipaddress.ip_address((host or "").split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def require_allocation(request: Request, secret: str) -> str:
    """Return the allocation id the caller's token belongs to, or refuse the call."""
    got = bearer(request)
    if not got or "." not in got:
        raise AuthError("this call needs the trial's allocation token (STALWART_ALLOCATION_TOKEN)")
    allocation_id = got.rsplit(".", 1)[0]
    if not hmac.compare_digest(allocation_token(secret, allocation_id), got):
        raise ForbiddenError("invalid allocation token")
    return allocation_id
