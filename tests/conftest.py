"""Shared fixtures: a real local cluster on SQLite or on the PostgreSQL server at 127.0.0.1:5432."""

from __future__ import annotations

import os
import pathlib
import uuid

import pytest

from stalwart.testing import LocalTestCluster

REPO = pathlib.Path(__file__).resolve().parents[1]
DIGITS = REPO / "examples" / "digits"
PG_ADMIN_URL = os.environ.get("STALWART_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def pg_url():
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    import psycopg

    name = f"stalwart_test_{uuid.uuid4().hex[:12]}"
    admin = PG_ADMIN_URL.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield admin.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def cluster(tmp_path):
    with LocalTestCluster(tmp_path / "home") as c:
        yield c


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_db_cluster(request, tmp_path):
    db_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    with LocalTestCluster(tmp_path / "home", db_url) as c:
        yield c
