"""Fixtures of the master's unit tests: a migrated database of each kind."""

from __future__ import annotations

import pytest

from stalwart.db.engine import Database


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request, tmp_path):
    """A freshly migrated master database, SQLite and (marked postgres) PostgreSQL."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else f"sqlite:///{tmp_path / 'm.db'}"
    database = Database(url)
    database.migrate()
    yield database
    database.dispose()
