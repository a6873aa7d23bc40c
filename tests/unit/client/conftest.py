"""Fixtures of the client's tests: a tiny real HTTP server (tiny_http.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tiny_http import TinyServer, serving


@pytest.fixture
def tiny_server() -> Iterator[TinyServer]:
    """A server on 127.0.0.1 answering `{}` until the test sets its handler with `answer_with`."""
    with serving() as server:
        yield server
