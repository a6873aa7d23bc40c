"""The master's app served by uvicorn in a thread of the test (as `stalwart master run` serves it), on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from stalwart.master.app import with_determined_listener
from stalwart.master.determined_api.listener import bind
from stalwart.testing import free_port


@contextmanager
def serving(app: Any, name: str) -> Iterator[str]:
    """Serve `app` on a free loopback port until the block ends; yields its base URL."""
    with serving_both(app, name, determined=False) as (url, _):
        yield url


@contextmanager
def serving_both(app: Any, name: str, *, determined: bool = True) -> Iterator[tuple[str, str | None]]:
    """Serve the master's `app` and, with `determined`, its Determined listener on a second port of the same server
    (as `stalwart master run --determined-port` does); yields both base URLs (the second None without it)."""
    port, det_port = free_port(), (free_port() if determined else None)
    served = with_determined_listener(app, det_port) if det_port else app
    server = uvicorn.Server(uvicorn.Config(served, host="127.0.0.1", port=port, log_level="warning",
                                           ws="websockets-sansio"))
    sockets = [bind("127.0.0.1", port)] + ([bind("127.0.0.1", det_port)] if det_port else [])
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the master did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", (f"http://127.0.0.1:{det_port}" if det_port else None)
    finally:
        server.should_exit = True
        thread.join(15)
