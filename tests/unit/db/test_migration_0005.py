"""Migration 0005 (experiments.notes): a database of the previous release (at 0004) upgrades in place, keeping its
experiments, which then have no notes; and it downgrades again."""

from __future__ import annotations

import pathlib

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from stalwart.db import Database
from stalwart.db.engine import _MIGRATIONS


def _to(db: Database, revision: str, *, down: bool = False) -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(cfg, revision)


def _columns(db: Database) -> set[str]:
    with db.engine.connect() as conn:
        return {c["name"] for c in sa.inspect(conn).get_columns("experiments")}


def _upgrade_keeps_experiments(url: str) -> None:
    db = Database(url)
    _to(db, "0004")
    assert "notes" not in _columns(db)
    with db.engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO experiments (name, labels, owner, config, config_text, state, archived, progress, created_at) "
            "VALUES ('old', '[\"a\"]', 'me', '{}', '', 'COMPLETED', false, 1, 1.0)"))
    db.migrate()
    assert "notes" in _columns(db)
    with db.engine.begin() as conn:
        rows = conn.execute(sa.text("SELECT name, labels, notes FROM experiments")).all()
        assert [(r[0], r[2]) for r in rows] == [("old", None)]
        conn.execute(sa.text("UPDATE experiments SET notes = 'kept'"))
    _to(db, "0004", down=True)
    assert "notes" not in _columns(db)
    with db.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT name FROM experiments")).scalars().all() == ["old"]
    db.dispose()


def test_0005_upgrades_a_0004_database_in_place_on_sqlite(tmp_path: pathlib.Path) -> None:
    _upgrade_keeps_experiments(f"sqlite:///{tmp_path / 'm.db'}")


@pytest.mark.postgres
def test_0005_upgrades_a_0004_database_in_place_on_postgres(pg_url: str) -> None:
    _upgrade_keeps_experiments(pg_url)
