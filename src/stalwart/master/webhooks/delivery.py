"""The master's delivery loop: sends due PENDING deliveries, signed, with a short timeout and at most
`CONCURRENCY` at once, so a receiver that hangs or is down never slows the master's other calls.

Every delivery was stored before its first attempt (events.py), so a master restart loses none: the loop picks up
whatever is PENDING when it starts (an attempt cut off by the restart is made again, with the same delivery id).
A failed attempt (no connection, a timeout, an answer other than 2xx) is retried 1 s later, then 2, 4, ... s;
after `signing.MAX_ATTEMPTS` the delivery is FAILED and its last error logged (never the signing key, nor the
URL's path and query, which may hold a token).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import urllib.parse
from typing import Any

import httpx

from stalwart.master.queries import webhooks as q
from stalwart.master.service import Master, now
from stalwart.master.webhooks import payloads, signing
from stalwart.master.webhooks.events import WAKE

log = logging.getLogger(__name__)

CONCURRENCY = 8
"""Attempts in flight at once: more due deliveries wait their turn."""
TIMEOUT_S = 5.0
"""The longest one attempt may take, connecting included."""
POLL_S = 1.0
"""How often the loop looks for due deliveries when nothing wakes it."""
KEY_FILE = "webhook-signing-key"


def signing_key(m: Master) -> str:
    """`webhooks.signing_key` of the master config; without one, a key made once and kept (0600) in the master's
    home as `webhook-signing-key`, for receivers to read from there."""
    configured = m.settings.cluster.webhooks.signing_key
    if configured:
        return configured
    path = m.settings.home / KEY_FILE
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
    return path.read_text().strip()


def where(url: str) -> str:
    """A URL as the log names it: scheme, host and port only."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _describe(err: BaseException) -> str:
    if isinstance(err, (TimeoutError, httpx.TimeoutException)):
        return f"no answer within {TIMEOUT_S:g} s"
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


async def run_forever(m: Master) -> None:
    """Send due deliveries until cancelled (the app's lifespan starts and stops it)."""
    key = signing_key(m)
    in_flight: set[str] = set()
    attempts: set[asyncio.Task[None]] = set()
    async with httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False, trust_env=False) as client:
        try:
            while True:
                try:
                    _start_due(m, client, key, in_flight, attempts)
                except Exception:  # the loop outlives a database hiccup: the next round tries again
                    log.exception("webhook delivery loop: reading due deliveries failed")
                await m.signals.wait(WAKE, POLL_S)
        finally:
            for task in attempts:
                task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.gather(*attempts, return_exceptions=True)


def _start_due(m: Master, client: httpx.AsyncClient, key: str, in_flight: set[str],
               attempts: set[asyncio.Task[None]]) -> None:
    free = CONCURRENCY - len(in_flight)
    if free <= 0:
        return
    with m.db.begin() as conn:
        rows = [dict(r) for r in q.due(conn, now(), free, in_flight)]
    for row in rows:
        in_flight.add(row["id"])
        task = asyncio.create_task(_attempt(m, client, key, row, in_flight))
        attempts.add(task)
        task.add_done_callback(attempts.discard)


async def _attempt(m: Master, client: httpx.AsyncClient, key: str, row: dict[str, Any], in_flight: set[str]) -> None:
    try:
        event = row["event"]
        body = payloads.render(row["webhook_type"], event, m.settings.cluster.webhooks.base_url)
        headers = signing.headers(key, int(now()), body, row["id"], str(event.get("event_type")))
        error: str | None = None
        try:
            reply = await asyncio.wait_for(client.post(row["url"], content=body, headers=headers), TIMEOUT_S)
            if not 200 <= reply.status_code < 300:
                error = f"the receiver answered {reply.status_code}"
        except (httpx.HTTPError, TimeoutError, OSError) as err:
            error = _describe(err)
        _record(m, row, row["attempts"] + 1, error)
    except Exception:
        log.exception("webhook delivery %s: recording the attempt failed (it is tried again)", row["id"])
    finally:
        in_flight.discard(row["id"])
        m.signals.notify(WAKE)


def _record(m: Master, row: dict[str, Any], attempts: int, error: str | None) -> None:
    delay = signing.retry_delay(attempts) if error is not None else None
    with m.db.begin() as conn:
        if error is None:
            q.delivered(conn, row["id"], attempts, now())
        elif delay is not None:
            q.retry_later(conn, row["id"], attempts, now() + delay, error)
        else:
            q.failed(conn, row["id"], attempts, now(), error)
    if error is not None and delay is None:
        log.warning("webhook %s delivery %s to %s FAILED after %d attempts: %s", row["webhook_id"], row["id"],
                    where(row["url"]), attempts, error)
    elif error is not None:
        log.info("webhook %s delivery %s to %s: attempt %d failed (%s); next in %g s", row["webhook_id"], row["id"],
                 where(row["url"]), attempts, error, delay)
