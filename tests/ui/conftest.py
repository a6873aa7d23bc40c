"""Fixtures for the UI tests: a real master with the UI (plus an agent), and one headless Chromium per session."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import time

import httpx
import pytest

from stalwart.testing import LocalTestCluster

HERE = pathlib.Path(__file__).parent
REPO = HERE.parents[1]
CHROMIUM = os.environ.get("STALWART_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class UICluster(LocalTestCluster):
    """A LocalTestCluster whose master also serves the web UI (via tests/ui/launch_master.py)."""

    fake_jobs = False

    def start_master(self) -> None:
        out = open(self.home / "master.log", "ab")
        args = [sys.executable, str(HERE / "launch_master.py"), "--db", self.db_url, "--home", str(self.home),
                "--port", str(self.port), "--agent-timeout", str(self.agent_timeout)]
        if self.fake_jobs:
            args.append("--fake-jobs")
        self.master = subprocess.Popen(args, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/api/v1/ui/status", timeout=1).json().get("ready"):
                    return
            except (httpx.HTTPError, ValueError):
                pass
            if self.master.poll() is not None:
                raise RuntimeError(f"master exited: {self.log('master.log')[-3000:]}")
            time.sleep(0.1)
        raise RuntimeError("master did not come up within 60 s")


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
def ui_cluster(tmp_path_factory):
    """One master (UI installed) and one agent with 3 slots, shared by the browser tests."""
    c = UICluster(tmp_path_factory.mktemp("ui") / "home", slots=3)
    with c:
        yield c


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no browser download needed)")
    if not shutil.which(CHROMIUM) and not pathlib.Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found: apt-get install -y chromium")
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
