"""Run a coroutine on a fresh event loop in its own thread.

`asyncio.run` refuses to start while the calling thread already runs a loop, and in an xdist worker a
browser test's Playwright (sync API) may have left one running in the main thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_fresh(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """asyncio.run(make()) in a new thread, returning its result or raising its exception."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = asyncio.run(make())
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = err

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]
