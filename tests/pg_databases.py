"""Fresh PostgreSQL databases on the server at 127.0.0.1:5432 (or STALWART_TEST_PG) for tests, dropped after."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

PG_ADMIN_URL = os.environ.get("STALWART_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextmanager
def fresh_database(prefix: str = "stalwart_test") -> Iterator[str]:
    """A new, empty database for the block: its URL; dropped (connections and all) when the block ends."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = PG_ADMIN_URL.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
