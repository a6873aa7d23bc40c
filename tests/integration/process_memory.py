"""A process's resident memory (VmRSS) for tests that bound a master's growth: now, and the peak over a stretch."""

from __future__ import annotations

import pathlib
import threading


def rss(pid: int) -> int:
    """The resident memory of process `pid`, in bytes."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


class PeakRss:
    """Samples a process's VmRSS every `every` seconds in a thread while in use (and once more at the end), keeping
    the highest."""

    def __init__(self, pid: int, every: float = 0.02) -> None:
        self.pid = pid
        self.every = every
        self.peak = rss(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, rss(self.pid))

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss(self.pid))
