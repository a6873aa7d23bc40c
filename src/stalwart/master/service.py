"""The master's shared state: database, secrets, wake-up signals, and small row helpers."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import defaultdict

import sqlalchemy as sa

from stalwart.api.errors import NotFoundError
from stalwart.db import Database, tables as t
from stalwart.master.auth import tokens
from stalwart.master.settings import MasterSettings


def now() -> float:
    return time.time()


def new_id() -> str:
    return uuid.uuid4().hex


class Signals:
    """asyncio events keyed by name, used to wake long-polls (agent actions, preemption, logs)."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = defaultdict(asyncio.Event)

    def notify(self, key: str) -> None:
        self._events[key].set()

    async def wait(self, key: str, timeout: float) -> None:
        ev = self._events[key]
        if timeout > 0:
            try:
                await asyncio.wait_for(ev.wait(), timeout)
            except asyncio.TimeoutError:
                pass
        ev.clear()


class Master:
    def __init__(self, settings: MasterSettings) -> None:
        self.settings = settings
        self.db = Database(settings.db_url)
        self.db.migrate()
        self.started_at = now()
        self.signals = Signals()
        self.kills_sent: set[str] = set()
        self.custom_searchers: dict = {}  # experiment id -> custom_search.SearcherProcess
        self.cluster_id, self.secret = self._cluster_identity()
        self.cluster_token = settings.cluster_token or self._info("cluster_token")

    # -- identity -------------------------------------------------------------------------
    def _info(self, key: str) -> str:
        with self.db.begin() as conn:
            return conn.execute(sa.select(t.cluster_info.c.value).where(t.cluster_info.c.key == key)).scalar_one()

    def _cluster_identity(self) -> tuple[str, str]:
        with self.db.begin() as conn:
            have = dict(conn.execute(sa.select(t.cluster_info.c.key, t.cluster_info.c.value)).all())
            for key, make in (("cluster_id", new_id), ("secret", tokens.new_secret), ("cluster_token", tokens.new_secret)):
                if key not in have:
                    conn.execute(t.cluster_info.insert().values(key=key, value=make()))
                    have[key] = conn.execute(
                        sa.select(t.cluster_info.c.value).where(t.cluster_info.c.key == key)
                    ).scalar_one()
        return have["cluster_id"], have["secret"]

    def allocation_token(self, allocation_id: str) -> str:
        return tokens.allocation_token(self.secret, allocation_id)

    def wake_scheduler(self) -> None:
        self.signals.notify("scheduler")

    # -- row helpers ----------------------------------------------------------------------
    @staticmethod
    def get_row(conn, table: sa.Table, key, what: str):
        row = conn.execute(sa.select(table).where(table.c[table.primary_key.columns.keys()[0]] == key)).mappings().first()
        if row is None:
            raise NotFoundError(f"{what} {key} not found")
        return row
