"""Credentials of the task proxy's own host name (`proxy_host`, docs/tasks.md): signed, short, for one task.

With `proxy_host` set, a browser opens tasks on a host of their own, so a page a task serves never runs with the
master's cookies. The master's host hands the way over with a *ticket* (good for 60 s, once) in the redirect; the
proxy host trades it for a *task cookie*, sent back only under `/proxy/<task id>/`. Both name a live session (by
its token's hash, which is no token) and one task, and carry an HMAC of the master's secret, so neither can be made
or moved to another task; the session's own end (logout, revocation, expiry) ends them too (`sessions.identity_of`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass

from stalwart.api.errors import AuthError

COOKIE = "stalwart_task"
TICKET_S = 60.0
"""How long a ticket in a redirect stays good."""
COOKIE_S = 12 * 3600.0
"""How long a task cookie stays good (never longer than its session)."""


@dataclass(frozen=True)
class Signed:
    """What a ticket or task cookie says: whose session, which task, until when."""

    token_hash: str
    task_id: str
    expires_at: float


def _mac(secret: str, purpose: str, body: str) -> str:
    return hmac.new(secret.encode(), f"{purpose}|{body}".encode(), hashlib.sha256).hexdigest()


def make(secret: str, purpose: str, token_hash: str, task_id: str, lifespan: float) -> str:
    """A ticket (`purpose` "ticket") or a task cookie ("cookie") for the session of `token_hash` and `task_id`."""
    body = f"{token_hash}|{task_id}|{int(time.time() + lifespan)}"
    raw = f"{body}|{_mac(secret, purpose, body)}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read(secret: str, purpose: str, value: str, task_id: str) -> Signed:
    """What `value` says, if the master made it for `purpose` and `task_id` and it has not expired (401 otherwise)."""
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
        token_hash, signed_task, expires, mac = raw.split("|")
        expires_at = float(expires)
    except (ValueError, UnicodeDecodeError):
        raise AuthError(f"not a {purpose} of this master: open the task from the master's own address again") from None
    body = f"{token_hash}|{signed_task}|{expires}"
    if not hmac.compare_digest(mac, _mac(secret, purpose, body)) or signed_task != task_id:
        raise AuthError(f"this {purpose} is not for {task_id}: open the task from the master's own address again")
    if expires_at <= time.time():
        raise AuthError(f"this {purpose} has expired: open the task from the master's own address again")
    return Signed(token_hash, signed_task, expires_at)
