"""Fixtures for the UI tests: a real master (which serves the UI) plus an agent, and one headless Chromium a session.

Pages are signed in the way a person signs in: a real form post of POST /login from the page's browser context,
which keeps the session cookies it answers with (`sign_in`). `page` is the admin's, on the shared `ui_cluster`;
`new_page` makes more (another cluster, another user, or nobody).
"""

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
        self.wait_for(lambda: self.api_get("/api/v1/ui/status").json().get("ready"), timeout=60,
                      interval=0.1, what="the master's metrics index to be built")

    def admin_headers(self) -> dict[str, str]:
        """The admin's session for plain HTTP calls (httpx) of the JSON API."""
        return {"Authorization": f"Bearer {self.admin_token}"}

    def api_get(self, path: str, **kw) -> httpx.Response:
        """GET a JSON API path as the admin."""
        return httpx.get(self.url + path, headers=self.admin_headers(), timeout=kw.pop("timeout", 10), **kw)


def sign_in(context, cluster: LocalTestCluster, username: str = "admin", password: str = "") -> None:
    """Sign a browser context in through the login form's real POST; the context keeps the session cookies.
    (The cookies of 127.0.0.1 are shared by every port: a context is signed in to one cluster at a time.)"""
    res = context.request.post(cluster.url + "/login", form={"username": username, "password": password, "next": "/"},
                               max_redirects=0)
    assert res.status == 303, f"signing in as {username} failed: HTTP {res.status} {res.text()[:500]}"


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
def new_page(browser):
    """Make a fresh page (1400x900, its own browser context) signed in to `cluster` as `username`, or as nobody
    (username None); any uncaught JavaScript error on any of them fails the test."""
    contexts = []
    errors: list[str] = []

    def make(cluster: LocalTestCluster | None = None, username: str | None = "admin", password: str = ""):
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        contexts.append(ctx)
        if cluster is not None and username is not None:
            sign_in(ctx, cluster, username, password)
        pg = ctx.new_page()
        pg.set_default_timeout(15_000)
        pg.on("pageerror", lambda err: errors.append(str(err)))
        return pg

    yield make
    for ctx in contexts:
        ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def page(new_page, ui_cluster):
    """A fresh page signed in to the shared cluster as the admin."""
    return new_page(ui_cluster)
