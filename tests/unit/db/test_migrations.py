"""Alembic migrations build exactly the schema `db/tables.py` declares, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from stalwart.db import Database, tables as t


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


def test_0003_downgrades_and_upgrades_again_keeping_experiments_as_jobs(tmp_path):
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config

    from stalwart.db.engine import _MIGRATIONS

    db = Database(f"sqlite:///{tmp_path / 'm.db'}")
    db.migrate()
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0002")
    with db.engine.begin() as conn:
        assert "jobs" not in sa.inspect(conn).get_table_names()
        conn.execute(sa.text(
            "INSERT INTO experiments (name, labels, owner, config, config_text, state, archived, progress, created_at) "
            "VALUES ('old', '[]', 'me', '{\"resources\": {\"priority\": 7}}', '', 'ACTIVE', 0, 0, 1.0)"))
    db.migrate()
    with db.engine.begin() as conn:
        rows = conn.execute(
            sa.text("SELECT type, entity_id, priority, weight, resource_pool, queue_position FROM jobs")).all()
    assert [tuple(r) for r in rows] == [("EXPERIMENT", 1, 7, 1.0, "default", 1.0)]
    db.dispose()
