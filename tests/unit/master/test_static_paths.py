"""Odd paths under /ui/static/ answer 404, never a 500 naming where the master is installed (issue 25, hole 12).

A name too long for the file system, `..` (plain or encoded), a NUL, an encoded slash, a directory, an absolute
path: each is a file the UI does not serve, so a 404 ErrorBody; and nothing of it reaches the master's log as a
traceback.
"""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings
from stalwart.master.ui import pages

ODD = [
    "x/" + "a" * 300,  # the request: one name over the file system's 255 bytes
    "x/" + "a/" * 3000,  # a path over PATH_MAX
    "x/" + "é" * 200,
    "x/../../app.py",
    "x/%2e%2e/%2e%2e/app.py",
    "x/..%2f..%2fapp.py",
    "x/a%00b",
    "x/%00",
    "x/js%2fnothing.js",
    "x/%2Fetc%2Fpasswd",
    "x//etc/passwd",
    "x/",
    "x/.",
    "x/js",
    "x/js/",
    "x/app.css/x",
]


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    home = tmp_path_factory.mktemp("static")
    app = create_app(MasterSettings(db_url=f"sqlite:///{home / 'm.db'}", home=home, ui_metrics_index=False))
    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize("path", ODD)
def test_an_odd_static_path_is_a_404(http: TestClient, path: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        reply = http.get("/ui/static/" + path)
    assert reply.status_code == 404, reply.text[:300]
    assert str(pages.STATIC.parent) not in reply.text
    assert not [r for r in caplog.records if r.exc_info], "a traceback in the master's log"


def test_a_real_static_file_is_served(http: TestClient) -> None:
    reply = http.get("/ui/static/x/app.css")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/css")


def test_every_type_a_static_file_is_served_as_is_documented() -> None:
    from stalwart.api.routes_table import STATIC_TYPES, lookup
    from stalwart.master.ui import pages

    spec = lookup("GET", "/ui/static/{version}/{path:path}")
    assert set(pages.TYPES.values()) <= {spec.content_type, *spec.also_content} == {*STATIC_TYPES, spec.content_type}
