"""Encoded series answers by (request, data version): a page opened again, or by a second user, costs nothing."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Hashable

from starlette.datastructures import State

Key = tuple[Hashable, ...]
"""A request's parameters and the version of the data it reads."""


class ResponseCache:
    """Encoded series by (request, data version), bounded by total bytes (LRU).

    The version is the metrics index's row count of the trials involved, so any new or re-read point
    changes the key; without a ready index there is no key and nothing is cached. STALWART_UI_SERIES_CACHE=0
    turns the cache off.
    """

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self.items: OrderedDict[Key, bytes] = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()
        self.enabled = os.environ.get("STALWART_UI_SERIES_CACHE", "1") != "0"

    def get(self, key: Key | None) -> bytes | None:
        """The answer cached under `key`, or None."""
        if key is None or not self.enabled:
            return None
        with self.lock:
            body = self.items.get(key)
            if body is not None:
                self.items.move_to_end(key)
            return body

    def put(self, key: Key | None, body: bytes) -> bytes:
        """Keep `body` under `key` (unless it is over a quarter of the cache) and return it."""
        if key is None or not self.enabled or len(body) > self.max_bytes // 4:
            return body
        with self.lock:
            if key not in self.items:
                self.items[key] = body
                self.size += len(body)
            while self.size > self.max_bytes:
                self.size -= len(self.items.popitem(last=False)[1])
        return body


def cache_of(state: State) -> ResponseCache:
    """The app's series cache (app.state.series_cache), made at its first use."""
    cache: ResponseCache | None = getattr(state, "series_cache", None)
    if cache is None:
        cache = state.series_cache = ResponseCache()
    return cache
