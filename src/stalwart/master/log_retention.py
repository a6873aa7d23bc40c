"""Trial log retention (Determined's `retention_policy`, docs/logs.md): every `retention_policy.schedule` of the
master config (a duration, 24h by default) the master deletes the log lines of each trial that ended more than its
retention ago: its experiment's `retention_policy.log_retention_days`, else the master's; -1 keeps them forever.
A trial still running, or whose retention has not run out, keeps every line."""

from __future__ import annotations

import asyncio
import logging

from stalwart.master.queries import log_policies as policy_rows
from stalwart.master.service import Master, now

log = logging.getLogger(__name__)


def delete_expired(m: Master) -> int:
    """One cleanup: delete the expired trials' lines now; how many were deleted."""
    with m.db.begin() as conn:
        deleted = policy_rows.delete_expired_logs(conn, now(), m.settings.cluster.retention.log_retention_days)
    if deleted:
        log.info("log retention: deleted %d expired trial log lines", deleted)
    return deleted


async def run_forever(m: Master) -> None:
    """A cleanup every `retention_policy.schedule`, the first one schedule after the start (as a cron job would)."""
    every = m.settings.cluster.retention.schedule_s
    while True:
        await asyncio.sleep(every)
        try:
            await asyncio.to_thread(delete_expired, m)
        except Exception:
            log.exception("log retention cleanup failed")
