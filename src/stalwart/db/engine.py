"""Database engine set-up (SQLite in WAL mode, or PostgreSQL by URL) and schema migration at start."""

from __future__ import annotations

import pathlib
from contextlib import AbstractContextManager

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry

from stalwart.db import tables

_MIGRATIONS = pathlib.Path(__file__).parent / "migrations"


def normalize_url(url: str) -> str:
    """Accept plain `postgresql://` URLs and pick the psycopg 3 driver for them."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def _sqlite_pragmas(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


class Database:
    """Owns the engine; `migrate()` brings the schema to the newest Alembic revision."""

    def __init__(self, url: str) -> None:
        self.url = normalize_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        if self.is_sqlite:
            path = self.url.split("///", 1)[-1]
            if path and path != ":memory:":
                pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.engine = sa.create_engine(self.url, connect_args={"check_same_thread": False})
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        else:
            self.engine = sa.create_engine(self.url, pool_pre_ping=True, pool_size=10)
        self.t = tables

    def migrate(self) -> None:
        cfg = Config()
        cfg.set_main_option("script_location", str(_MIGRATIONS))
        if self.is_sqlite:
            self._migrate_sqlite(cfg)
            return
        with self.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def _migrate_sqlite(self, cfg: Config) -> None:
        """SQLite rebuilds a table to change it (batch mode): dropping the old one would break the foreign keys of
        the rows naming it. So, as SQLite's own procedure asks, enforcement is off while migrations run (the pragma
        only takes effect outside a transaction), and every foreign key is checked before the commit."""
        with self.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            conn.commit()
            try:
                with conn.begin():
                    conn.exec_driver_sql("BEGIN")  # Python's sqlite3 would begin only at the first write, after DDL
                    cfg.attributes["connection"] = conn
                    command.upgrade(cfg, "head")
                    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
                    if broken:
                        raise RuntimeError(f"the schema migration would break foreign keys (table, rowid, parent): "
                                           f"{[tuple(r)[:3] for r in broken[:5]]}; nothing was changed")
            finally:
                conn.exec_driver_sql("PRAGMA foreign_keys=ON")
                conn.commit()

    def begin(self) -> AbstractContextManager[sa.Connection]:
        return self.engine.begin()

    def connect(self) -> sa.Connection:
        return self.engine.connect()

    def dispose(self) -> None:
        self.engine.dispose()
