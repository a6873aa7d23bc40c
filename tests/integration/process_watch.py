"""A watcher that scans processes every 0.2 s and records any moment two processes of one trial are alive."""

from __future__ import annotations

import os
import pathlib
import threading
import time
from collections import defaultdict

from stalwart.agent.fencing import running


def trial_processes(marker: str, script: bytes = b"train.py") -> dict[int, list[int]]:
    """Trial id -> pids of the processes running its script (the `sh -c` wrapper and watchdogs excluded), among
    those whose environment holds `marker` (e.g. `LEDGER=/tmp/...`: one test's cluster, not a neighbour's)."""
    found: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = pathlib.Path(f"/proc/{entry}/cmdline").read_bytes()
            if script not in cmd or cmd.startswith(b"sh\x00-c") or b"/sh\x00-c" in cmd:
                continue
            env = pathlib.Path(f"/proc/{entry}/environ").read_bytes().split(b"\x00")
        except OSError:
            continue
        if marker.encode() not in env:
            continue
        for var in env:
            if var.startswith(b"STALWART_TRIAL_ID="):
                found[int(var.split(b"=", 1)[1])].append(int(entry))
    return found


class DoubleRunWatcher(threading.Thread):
    """Records (time, trial id, pids) whenever more than one process of a trial is alive at once."""

    def __init__(self, marker: str, interval: float = 0.2, script: bytes = b"train.py") -> None:
        super().__init__(daemon=True, name="double-run-watcher")
        self.marker, self.interval, self.script = marker, interval, script
        self.doubles: list[tuple[float, int, list[int]]] = []
        self.scans = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            for trial_id, pids in trial_processes(self.marker, self.script).items():
                alive = [p for p in pids if running(p)]
                if len(alive) > 1:
                    self.doubles.append((time.time(), trial_id, alive))
            self.scans += 1

    def stop(self) -> None:
        self._stop_event.set()
        if self.ident is not None:  # started
            self.join(5)
