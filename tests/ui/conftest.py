"""Fixtures for the UI tests: a real master (which serves the UI) plus an agent, and one headless Chromium a session."""

from __future__ import annotations

import os
import pathlib
import uuid

import httpx
import pytest

from stalwart.testing import LocalTestCluster

HERE = pathlib.Path(__file__).parent
REPO = HERE.parents[1]
CHROMIUM = os.environ.get("STALWART_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class UICluster(LocalTestCluster):
    """A LocalTestCluster (`stalwart master run`, which serves the UI) that also waits for the metrics index."""

    def start_master(self) -> None:
        super().start_master()
        self.wait_for(lambda: httpx.get(self.url + "/api/v1/ui/status", timeout=2).json().get("ready"), timeout=60,
                      interval=0.1, what="the master's metrics index to be built")


def screenshot_dir(tmp_path_factory) -> pathlib.Path:
    """docs/ui when STALWART_UI_SCREENSHOTS=1 (to refresh the committed screenshots), else a temp dir."""
    if os.environ.get("STALWART_UI_SCREENSHOTS") == "1":
        d = REPO / "docs" / "ui"
        d.mkdir(parents=True, exist_ok=True)
        return d
    return tmp_path_factory.mktemp("screens")


@pytest.fixture(scope="session")
def shots(tmp_path_factory) -> pathlib.Path:
    return screenshot_dir(tmp_path_factory)


@pytest.fixture(scope="session")
def ui_db(tmp_path_factory):
    """The browser tests' master database: SQLite, or with STALWART_UI_TEST_DB=postgres a fresh PostgreSQL one."""
    if os.environ.get("STALWART_UI_TEST_DB", "sqlite") != "postgres":
        yield None
        return
    import psycopg

    admin = os.environ.get("STALWART_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
    name = f"stalwart_ui_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield admin.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def ui_cluster(tmp_path_factory, ui_db):
    """One master (UI installed) and one agent with 3 slots, shared by the browser tests."""
    with UICluster(tmp_path_factory.mktemp("ui") / "home", ui_db, slots=3) as c:
        yield c


def _missing(what: str) -> None:
    """Skip on a developer machine without the browser; fail in CI (CI=true), where .ci/run installs both."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what}: the browser tests must run in CI", pytrace=False)
    pytest.skip(what)


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright import sync_api
    except ImportError:
        _missing("playwright is not installed: pip install -c requirements.lock -e '.[dev]' "
                 "(no browser download needed)")
    if not pathlib.Path(CHROMIUM).exists():
        _missing(f"{CHROMIUM} not found: apt-get install -y chromium")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh page (1400x900); any uncaught JavaScript error fails the test."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(15_000)
    errors: list[str] = []
    pg.on("pageerror", lambda err: errors.append(str(err)))
    yield pg
    ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
