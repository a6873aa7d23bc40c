"""Following a trial: wait for it to exist, then print its log lines as they arrive until it ends."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from stalwart.api.errors import MasterUnavailable
from stalwart.api.models.trials import LogEntry
from stalwart.cli import output
from stalwart.client import Client

LogStream = Callable[[int], Iterator[LogEntry]]
"""Opens a log stream after the given line id."""


def wait_for_first_trial(client: Client, exp_id: int, timeout: float = 3600) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = client.get_experiment(exp_id)
        if d.trials:
            return d.trials[0].id
        if d.experiment.state.terminal:
            return None
        time.sleep(0.3)
    return None


def format_line(entry: LogEntry) -> str:
    rank = f"[rank={entry.rank_id}] " if entry.rank_id is not None else ""
    source = "[master] " if entry.source == "master" else ""
    return f"[{output.when(entry.timestamp)}] {source}{rank}{entry.log}"


def follow_trial_logs(client: Client, trial_id: int, follow: bool = True) -> None:
    """Print the trial's logs; with follow, reconnect after a master restart and keep going."""
    follow_logs(lambda after: client.stream_trial_logs(trial_id, follow=follow, after_id=after), follow)


def follow_task_logs(client: Client, task_id: int, follow: bool = True) -> None:
    """Print a command's output; with follow, reconnect after a master restart and keep going."""
    follow_logs(lambda after: client.stream_task_logs(task_id, follow=follow, after_id=after), follow)


def follow_logs(stream: LogStream, follow: bool = True) -> None:
    """Print a log stream (a trial's or a task's); with follow, reconnect after a master restart."""
    last = 0
    while True:
        try:
            for entry in stream(last):
                last = entry.id
                print(format_line(entry), flush=True)
            return
        except MasterUnavailable as err:
            if not follow:
                raise
            output.info(f"{err}; reconnecting...")
            time.sleep(1.0)
