"""The config secrets that concern an allocation, so that its stored task logs never show them
(`env.secrets_of`): its task config's (registry credentials, and the checkpoint storage's credentials its trial
writes with) and its pool's `task_container_defaults`' registry credentials (`config/secrets.py` says which keys
are secrets).

They are looked up once per allocation and master process (neither a task's config nor the master's config
changes while it runs) and kept in a bounded cache. Secrets shorter than MIN_MASKED characters are not masked: a
one-letter password would blank that letter out of every line.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

from stalwart.config import secrets
from stalwart.master.queries import (
    commands as command_rows,
    experiments as experiment_rows,
    jobs as job_rows,
    runs,
    trials as trial_rows,
)
from stalwart.master.service import Master

MAX_KEPT = 4096
MIN_MASKED = 4

_KEPT: weakref.WeakKeyDictionary[Master, OrderedDict[str, tuple[str, ...]]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def of_allocation(m: Master, allocation_id: str) -> tuple[str, ...]:
    """The registry secrets of `allocation_id`'s task and pool (none for an allocation the master does not know)."""
    with _LOCK:
        found = _KEPT.setdefault(m, OrderedDict()).get(allocation_id)
    if found is not None:
        return found
    found = _look_up(m, allocation_id)
    with _LOCK:
        kept = _KEPT.setdefault(m, OrderedDict())
        kept[allocation_id] = found
        while len(kept) > MAX_KEPT:
            kept.popitem(last=False)
    return found


def _look_up(m: Master, allocation_id: str) -> tuple[str, ...]:
    with m.db.begin() as conn:
        alloc = runs.find(conn, allocation_id)
        if alloc is None:
            return ()
        if alloc["command_id"] is not None:
            config = command_rows.get(conn, alloc["command_id"])["config"]
            pool = job_rows.pool_of(conn, job_rows.COMMAND, alloc["command_id"])
        elif alloc["trial_id"] is not None:
            exp_id = trial_rows.get(conn, alloc["trial_id"])["experiment_id"]
            config = experiment_rows.get(conn, exp_id)["config"]
            pool = job_rows.pool_of(conn, job_rows.EXPERIMENT, exp_id)
        else:
            return ()
    admins = m.settings.cluster.container_defaults(pool).registry_auth or {}
    found = [*secrets.secret_values(config), *secrets.secret_values({"environment": {"registry_auth": admins}})]
    return tuple(s for s in dict.fromkeys(found) if len(s) >= MIN_MASKED)
