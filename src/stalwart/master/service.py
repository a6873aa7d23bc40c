"""The master's shared state: database, secrets, wake-up signals, and small row helpers."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from stalwart.api.errors import NotFoundError
from stalwart.db import Database, counters, tables as t
from stalwart.master.identity import tokens
from stalwart.master.settings import MasterSettings
from stalwart.searcher.base import SearchMethod


def now() -> float:
    """Seconds since the Unix epoch: every timestamp the master stores."""
    return time.time()


def new_id() -> str:
    """A fresh id (hex uuid) for allocations, jobs and the cluster."""
    return uuid.uuid4().hex


class Signals:
    """asyncio events keyed by name, used to wake long-polls (agent actions, preemption, logs). `notify` may be
    called from any thread (a worker thread, a Kubernetes pod informer): off the event loop's thread it hands the
    wake-up to the loop."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self._loop: asyncio.AbstractEventLoop | None = None

    def notify(self, key: str) -> None:
        loop = self._loop
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # not on a loop's thread
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._events[key].set)
                return
        self._events[key].set()

    async def wait(self, key: str, timeout: float) -> None:
        """Wait until `key` is notified or `timeout` seconds pass (no wait when it is 0), then re-arm it."""
        self._loop = asyncio.get_running_loop()
        ev = self._events[key]
        if timeout > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ev.wait(), timeout)
        ev.clear()


@dataclass(frozen=True)
class Identity:
    """The user behind a request and the session it came with (identity.sessions finds it; kept here, below the
    identity layer, because the master caches it)."""

    user_id: int
    username: str
    admin: bool
    session_id: int
    kind: str  # login | access | task
    expires_at: float | None
    token_hash: str


@dataclass
class KnownCredential:
    """An agent's credential the master has seen (cluster.credentials): whose, whether revoked, and when its use
    was last written."""

    agent_id: str
    revoked_at: float | None
    used_written: float


class Master:
    """What every part of the master shares: settings, database, cluster identity and secrets, signals."""

    def __init__(self, settings: MasterSettings) -> None:
        self.settings = settings
        self.db = Database(settings.db_url)
        self.db.migrate()
        with self.db.begin() as conn:  # ids named by TensorBoard directories in storage are not handed out again
            counters.raise_past_storage(conn, [settings.default_checkpoint_storage()])
        self.started_at = now()
        self.signals = Signals()
        self.kills_sent: set[str] = set()
        # experiment id -> its custom searcher (experiments.custom_search.SearcherProcess, a layer above this one)
        self.custom_searchers: dict[int, SearchMethod] = {}
        # token hash -> the identity of a live session (identity.sessions)
        self.session_cache: dict[str, Identity] = {}
        # user id -> [(role, workspace id or None)] (identity.authz), cleared with the session cache
        self.roles_cache: dict[int, list[tuple[str, int | None]]] = {}
        # credential hash -> an agent's credential seen (cluster.credentials; cleared on every change)
        self.agent_credential_cache: dict[str, KnownCredential] = {}
        # a resource manager's state between passes, which the next pass could rebuild (Slurm: when it last polled)
        self.engine_state: dict[str, Any] = {}
        # a resource manager's connections to its engine, kept across passes (Kubernetes: its API client and pod
        # informers); never cleared by `poll_engines_now`
        self.engine_links: dict[str, Any] = {}
        # the task proxy's kept-alive connections to task services (proxy/upstream.Pool), made at its first call
        self.proxy_pool: Any = None
        # the task proxy's recent lookups: (task id, username) -> (valid until, monotonic; the service found)
        self.proxy_targets: dict[tuple[str, str], tuple[float, Any]] = {}
        # allocation id -> when its task was last in use (wall time): proxy traffic, its own reports (tasks/idle.py)
        self.task_activity: dict[str, float] = {}
        # experiment id -> its log policies compiled, and trial id -> its experiment's id (log_policies.py)
        self.log_policy_cache: dict[int, Any] = {}
        self.trial_experiments: dict[int, int] = {}
        self.cluster_id, self.secret = self._cluster_identity()
        self.cluster_token = settings.cluster_token or self._info("cluster_token")

    # -- identity -------------------------------------------------------------------------
    def _info(self, key: str) -> str:
        with self.db.begin() as conn:
            value: str = conn.execute(
                sa.select(t.cluster_info.c.value).where(t.cluster_info.c.key == key)).scalar_one()
            return value

    def _cluster_identity(self) -> tuple[str, str]:
        with self.db.begin() as conn:
            have: dict[str, str] = dict(conn.execute(sa.select(t.cluster_info.c.key, t.cluster_info.c.value)).all())
            makers = (("cluster_id", new_id), ("secret", tokens.new_secret), ("cluster_token", tokens.new_secret))
            for key, make in makers:
                if key not in have:
                    conn.execute(t.cluster_info.insert().values(key=key, value=make()))
                    have[key] = conn.execute(
                        sa.select(t.cluster_info.c.value).where(t.cluster_info.c.key == key)
                    ).scalar_one()
        return have["cluster_id"], have["secret"]

    @staticmethod
    def cluster_info(conn: sa.Connection, key: str) -> str | None:
        value: str | None = conn.execute(
            sa.select(t.cluster_info.c.value).where(t.cluster_info.c.key == key)).scalar_one_or_none()
        return value

    @staticmethod
    def set_cluster_info(conn: sa.Connection, key: str, value: str) -> None:
        conn.execute(t.cluster_info.delete().where(t.cluster_info.c.key == key))
        conn.execute(t.cluster_info.insert().values(key=key, value=value))

    def allocation_token(self, allocation_id: str) -> str:
        """The token a trial process of `allocation_id` authenticates with."""
        return tokens.allocation_token(self.secret, allocation_id)

    def poll_engines_now(self) -> None:
        """The resource managers poll their engines on the next scheduling pass, which starts now (their waits
        between polls, `engine_state`, are forgotten)."""
        self.engine_state.clear()
        self.wake_scheduler()

    def wake_scheduler(self) -> None:
        """Run a scheduling pass now rather than at the next interval."""
        self.signals.notify("scheduler")

    # -- row helpers ----------------------------------------------------------------------
    @staticmethod
    def get_row(conn: sa.Connection, table: sa.Table, key: object, what: str) -> sa.RowMapping:
        """The row of `table` whose primary key is `key`; a 404 naming `what` when there is none."""
        pk = table.c[table.primary_key.columns.keys()[0]]
        row = conn.execute(sa.select(table).where(pk == key)).mappings().first()
        if row is None:
            raise NotFoundError(f"{what} {key} not found")
        return row
