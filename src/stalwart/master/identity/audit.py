"""The audit log: every call by a user that changes something (who, what, target, when, outcome).

`AuditLog` is an ASGI middleware. The user-route check (`routes/contract`) and the login routes mark a request
for the log (`mark`), naming its user and target; once the answer has been sent, a marked request that is not
a read is written to `audit_log` with its status: ok (< 400), refused (401, 403), throttled (429: a login in
the back-off of failed logins, identity/login_guard.py) or failed. Agents' and trials' calls are not users' and
are not logged (metrics ingest stays as fast as it was).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stalwart.master.queries import users as q
from stalwart.master.service import Master

_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_KEY = "audit"
log = logging.getLogger("stalwart.master.audit")


def mark(request: Request, username: str | None, target: str | None) -> None:
    """Log this request (if it changes something) as `username`'s call on `target`."""
    request.state.audit = (username, target)


def outcome_of(status: int) -> str:
    if status < 400:
        return "ok"
    if status == 429:
        return "throttled"
    return "refused" if status in (401, 403) else "failed"


class AuditLog:
    def __init__(self, app: ASGIApp, master: Master) -> None:
        self.app = app
        self.master = master

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _READS:
            await self.app(scope, receive, send)
            return
        status = 500

        async def remember_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, remember_status)
        finally:
            marked: Any = scope.get("state", {}).get(_KEY)
            if marked is not None:
                self._record(scope, marked, status)

    def _record(self, scope: Scope, marked: tuple[str | None, str | None], status: int) -> None:
        username, target = marked
        try:
            with self.master.db.begin() as conn:
                q.insert_audit(conn, timestamp=time.time(), username=username, method=scope["method"],
                               path=scope["path"], target=target, status=status, outcome=outcome_of(status))
        except Exception:  # noqa: BLE001 - the call itself has been answered; say so in the log
            log.exception("could not write the audit log entry of %s %s", scope["method"], scope["path"])
