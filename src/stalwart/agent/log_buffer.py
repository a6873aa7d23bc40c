"""The agent's log lines on their way to the master: a byte bound per allocation, back-pressure, counted drops."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # of line text, per allocation
DEFAULT_BLOCK_TIMEOUT = 30.0  # seconds a full buffer may hold a trial's output before lines are dropped

# What lines of one stream share: each line in the buffer is (meta, timestamp, text, size) with `meta` one of
# these dicts, shared by every line of that stream (so a line costs a tuple, and the shipper sends runs).
META_KEYS = ("allocation_id", "trial_id", "agent_id", "rank_id", "stdtype", "source", "level")
Meta = dict[str, Any]
Line = tuple[Meta, float, str, int]  # (meta, timestamp, text, size counted against the bound)


class Every:
    """`wait_empty` for the lines of every allocation."""


EVERY = Every()


class _Allocation:
    __slots__ = ("bytes", "dropped", "first_dropped")

    def __init__(self) -> None:
        self.bytes = 0  # text of this allocation's lines in the buffer (a newline counted for each)
        self.dropped = 0  # lines dropped since the last marker; while > 0, new lines are dropped at once
        self.first_dropped: tuple[Meta, float] | None = None  # (meta, timestamp) of the first of them, for the marker


class LogBuffer:
    """Lines in arrival order. Adding blocks while the line's allocation has `max_bytes` buffered; after
    `block_timeout` seconds it drops lines (without blocking) until the master takes some, then puts one
    `N lines dropped` marker where they were. One consumer `take`s the oldest lines and, once the master has
    them, `ack`s exactly those: nothing else ever removes a line."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, block_timeout: float = DEFAULT_BLOCK_TIMEOUT,
                 on_full: Callable[[], object] | None = None) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes: expected a positive number of bytes, got {max_bytes}")
        if block_timeout < 0:
            raise ValueError(f"block_timeout: expected seconds >= 0, got {block_timeout}")
        self.max_bytes = max_bytes
        self.block_timeout = block_timeout
        self._on_full = on_full  # called (without the lock) when an add has to wait: wake the consumer
        self._lines: deque[Line] = deque()
        self._allocs: dict[str | None, _Allocation] = {}
        self._acked = 0  # lines acked so far: progress, for `wait_empty`
        self._cv = threading.Condition()

    @staticmethod
    def meta(entry: dict[str, Any]) -> Meta:
        """The shared part of a line given as one dict ({log, timestamp, allocation_id, ...})."""
        return {k: entry.get(k) for k in META_KEYS}

    def add(self, entry: dict[str, Any]) -> bool:
        """Append one line given as a dict; False if it was dropped."""
        return self.add_lines(self.meta(entry), [(entry.get("timestamp") or time.time(), entry.get("log") or "")]) == 1

    def add_lines(self, meta: Meta, lines: list[tuple[float, str]]) -> int:
        """Append (timestamp, text) lines sharing `meta`, in order; returns how many were kept. Blocks while
        their allocation's share is full; once it has been full for `block_timeout`, drops them."""
        key = meta.get("allocation_id")
        kept = 0
        with self._cv:
            st = self._state(key)
            for ts, text in lines:
                size = len(text) + 1
                deadline = None
                # a line bigger than the whole bound still goes in once the allocation has nothing buffered
                while not st.dropped and st.bytes and st.bytes + size > self.max_bytes:
                    now = time.monotonic()
                    if deadline is None:
                        deadline = now + self.block_timeout
                        if self._on_full is not None:
                            self._cv.release()
                            try:
                                self._on_full()
                            finally:
                                self._cv.acquire()
                    elif now >= deadline:
                        st.first_dropped = (meta, ts)
                        st.dropped = 1
                        break
                    else:
                        self._cv.wait(deadline - now)
                    st = self._state(key)  # looked up again after a wait: an emptied state is let go
                else:
                    if st.dropped:
                        st.dropped += 1
                    else:
                        st.bytes += size
                        self._lines.append((meta, ts, text, size))
                        kept += 1
        return kept

    def _state(self, key: str | None) -> _Allocation:
        st = self._allocs.get(key)
        if st is None:
            st = self._allocs[key] = _Allocation()
        return st

    def take(self, max_lines: int, max_bytes: int) -> list[Line]:
        """The oldest lines, (meta, timestamp, text, size) each: at least one if any, at most `max_lines` and
        about `max_bytes` of text. They stay in the buffer until acked."""
        batch: list[Line] = []
        total = 0
        with self._cv:
            for line in self._lines:
                total += line[3]
                if batch and (len(batch) >= max_lines or total > max_bytes):
                    break
                batch.append(line)
        return batch

    def ack(self, batch: list[Line]) -> None:
        """The master has stored `batch` (what `take` returned): remove exactly those lines, then put a marker
        after them for every allocation that dropped lines while it was full."""
        with self._cv:
            for line in batch:
                head = self._lines.popleft()
                if head is not line:
                    raise RuntimeError("log buffer: acked lines are not the oldest ones (two consumers?)")
                self._allocs[line[0].get("allocation_id")].bytes -= line[3]
            self._acked += len(batch)
            for key, st in list(self._allocs.items()):
                if st.dropped and st.bytes < self.max_bytes:
                    assert st.first_dropped is not None  # set with the first drop
                    meta, ts = st.first_dropped
                    text = f"{st.dropped} lines dropped"
                    marker = {**meta, "rank_id": None, "stdtype": "stdout", "source": "agent", "level": "WARNING"}
                    st.bytes += len(text) + 1
                    st.dropped, st.first_dropped = 0, None
                    self._lines.append((marker, ts, text, len(text) + 1))
                elif not st.bytes and not st.dropped:
                    del self._allocs[key]
            self._cv.notify_all()

    def pending(self) -> int:
        """Lines waiting, counting each marker still to be placed as one."""
        with self._cv:
            return len(self._lines) + sum(1 for st in self._allocs.values() if st.dropped)

    def buffered_bytes(self, allocation_id: str | None) -> int:
        with self._cv:
            st = self._allocs.get(allocation_id)
            return st.bytes if st else 0

    def _empty(self, allocation_id: str | None | Every) -> bool:
        if isinstance(allocation_id, Every):
            return not self._lines and not any(st.dropped for st in self._allocs.values())
        st = self._allocs.get(allocation_id)
        return st is None or (not st.bytes and not st.dropped)

    def wait_empty(self, timeout: float, allocation_id: str | None | Every = EVERY) -> bool:
        """Wait until every line (and marker) of `allocation_id` (default: of every allocation) has been acked.
        False once `timeout` seconds pass in which the consumer acks nothing: a slow master that keeps taking
        lines is waited for, one that stopped is not."""
        with self._cv:
            while not self._empty(allocation_id):
                acked = self._acked
                self._cv.wait(timeout)
                if self._acked == acked and not self._empty(allocation_id):
                    return False
            return True
