"""Remove the work directories of ended allocations (`<work root>/<allocation id>`), keeping the newest few.

An allocation's directory (its extracted context, up to 95 MiB, and its run files) goes once its exit has
reached the master (the agent flushes its logs before reporting the exit). `keep` > 0 keeps that many of the
most recently ended ones, for debugging. Directories left by an earlier agent on the same work root (a crash)
count as ended when the sweeper starts, unless the agent runs them.
"""

from __future__ import annotations

import logging
import os
import pathlib
import re
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterable

log = logging.getLogger("stalwart.agent")

_ALLOCATION_DIR = re.compile(r"^[0-9a-f]{32}$")  # master.service.new_id(): nothing else under the root is removed


class WorkDirSweeper(threading.Thread):
    """`ended(id)` when an allocation's exit has been queued for the master; `live()` names the allocations whose
    directories must stay (running, or exit not yet delivered); `unreported()` the exits not yet delivered."""

    def __init__(self, root: pathlib.Path, keep: int, live: Callable[[], Iterable[str]],
                 unreported: Callable[[], Iterable[str]], interval: float = 1.0) -> None:
        super().__init__(daemon=True, name="work-dir-sweeper")
        if keep < 0:
            raise ValueError(f"keep must be >= 0, got {keep}")
        self.root = pathlib.Path(root)
        self.keep = keep
        self._live = live
        self._unreported = unreported
        self.interval = interval
        self._lock = threading.Lock()
        self._ended: dict[str, float] = {}  # allocation id -> when it ended
        self._wake = threading.Event()

    def ended(self, allocation_id: str) -> None:
        with self._lock:
            self._ended.setdefault(allocation_id, time.time())
        self._wake.set()

    def adopt_stale(self) -> list[str]:
        """Count every allocation directory that no live allocation owns as ended (when it was last modified)."""
        dirs = self._allocation_dirs()
        live = set(self._live())  # after listing: a directory is made only once its allocation is live
        found = []
        for path in dirs:
            if path.name in live:
                continue
            try:
                when = path.stat().st_mtime
            except OSError:
                continue
            with self._lock:
                self._ended.setdefault(path.name, when)
            found.append(path.name)
        return found

    def sweep(self) -> list[str]:
        """Remove the directories of ended allocations whose exits reached the master, but the newest `keep`."""
        live = set(self._live())
        unreported = set(self._unreported())
        with self._lock:
            done = sorted(((when, a) for a, when in self._ended.items() if a not in live and a not in unreported),
                          reverse=True)
        removed = []
        for _when, allocation_id in done[self.keep:]:
            path = self.root / allocation_id
            if _remove_tree(path):
                removed.append(allocation_id)
            with self._lock:
                self._ended.pop(allocation_id, None)
        return removed

    def run(self) -> None:
        stale = self.adopt_stale()
        if stale:
            log.info("found %d work director%s of allocations not running here", len(stale),
                     "y" if len(stale) == 1 else "ies")
        while True:
            try:
                removed = self.sweep()
            except OSError as err:  # e.g. the work root vanished: try again later
                log.warning("could not clean up work directories under %s: %s", self.root, err)
                removed = []
            if removed:
                log.info("removed the work directories of %d ended allocation(s)", len(removed))
            self._wake.wait(self.interval)
            self._wake.clear()

    def _allocation_dirs(self) -> list[pathlib.Path]:
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        return [pathlib.Path(e.path) for e in entries
                if _ALLOCATION_DIR.match(e.name) and e.is_dir(follow_symlinks=False)]


def _remove_tree(path: pathlib.Path) -> bool:
    """Remove `path` and everything under it, even what the trial made read-only; False if something stayed."""
    if not os.path.lexists(path):
        return True
    try:
        shutil.rmtree(path, onerror=_make_writable)  # first pass: whatever failed is made writable
        if os.path.lexists(path):
            shutil.rmtree(path)  # second pass, now with the permissions fixed
    except OSError as err:
        log.warning("could not remove work directory %s: %s", path, err)
        return False
    return True


def _make_writable(_func: Callable[..., object], failed: str, _exc: object) -> None:
    for target in (os.path.dirname(failed), failed):
        try:
            if not os.path.islink(target):
                os.chmod(target, os.stat(target).st_mode | stat.S_IRWXU)
        except OSError:
            pass
