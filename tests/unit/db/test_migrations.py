"""Alembic migrations build exactly the schema `db/tables.py` declares, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from stalwart.db import Database
from stalwart.db import tables as t


def _diff(url: str) -> list:
    db = Database(url)
    db.migrate()
    with db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": False})
        diff = compare_metadata(ctx, t.metadata)
    db.dispose()
    return [d for d in diff if not (isinstance(d, tuple) and d[0] == "remove_table" and d[1].name == "alembic_version")]


def test_migrations_match_the_tables_on_sqlite(tmp_path):
    assert _diff(f"sqlite:///{tmp_path / 'm.db'}") == []


@pytest.mark.postgres
def test_migrations_match_the_tables_on_postgres(pg_url):
    assert _diff(pg_url) == []
