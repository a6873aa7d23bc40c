"""Following a trial: wait for it to exist, then print its log lines as they arrive until it ends."""

from __future__ import annotations

import time

from stalwart.api.errors import MasterUnavailable
from stalwart.cli import output
from stalwart.client import Client


def wait_for_first_trial(client: Client, exp_id: int, timeout: float = 3600) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = client.get(f"/experiments/{exp_id}")
        if d["trials"]:
            return d["trials"][0]["id"]
        if d["experiment"]["state"] in ("COMPLETED", "CANCELED", "ERROR"):
            return None
        time.sleep(0.3)
    return None


def format_line(entry: dict) -> str:
    rank = f"[rank={entry['rank_id']}] " if entry.get("rank_id") is not None else ""
    source = "[master] " if entry.get("source") == "master" else ""
    return f"[{output.when(entry['timestamp'])}] {source}{rank}{entry['log']}"


def follow_trial_logs(client: Client, trial_id: int, follow: bool = True) -> None:
    """Print the trial's logs; with follow, reconnect after a master restart and keep going."""
    follow_logs(client, f"/trials/{trial_id}/logs", follow)


def follow_logs(client: Client, path: str, follow: bool = True) -> None:
    """Print a log stream (`path`: a trial's or a task's logs); with follow, reconnect after a master restart."""
    last = 0
    while True:
        try:
            for entry in client.stream_lines(path, follow=str(follow).lower(), after_id=last):
                last = entry["id"]
                print(format_line(entry), flush=True)
            return
        except MasterUnavailable as err:
            if not follow:
                raise
            output.info(f"{err}; reconnecting...")
            time.sleep(1.0)
