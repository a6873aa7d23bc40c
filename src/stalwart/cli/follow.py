"""Following a trial: wait for it to exist, then print its log lines as they arrive until it ends; then how its
experiment ended."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from stalwart.api.errors import MasterUnavailable, StalwartError
from stalwart.api.models.experiments import ExperimentDetail
from stalwart.api.models.trials import LogEntry
from stalwart.api.states import ExperimentState
from stalwart.cli import output, queued
from stalwart.cli.log_filters import LogFilter
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


def follow_trial_logs(client: Client, trial_id: int, follow: bool = True, *, after_id: int = 0,
                      log_filter: LogFilter | None = None, prefix: str = "") -> None:
    """Print the trial's logs after line `after_id` (only those `log_filter` keeps, each after `prefix`); with follow,
    reconnect after a master restart and keep going. A tail with follow is the last lines there are, then the new
    ones (a tail of 0: only the new ones)."""
    params = (log_filter or LogFilter()).params()
    tail = params.pop("tail")
    if tail == 0:
        after_id, tail = max(after_id, last_log_id(client, trial_id)), None
    start = after_id

    def stream(after: int) -> Iterator[LogEntry]:
        # the tail is taken once: a reconnect after lines were printed goes on from the last one printed
        return client.stream_trial_logs(trial_id, follow=follow, after_id=after,
                                        tail=tail if after == start else None, **params)

    follow_logs(stream, follow, after_id, prefix, answers=lambda: master_answers(client))


def last_log_id(client: Client, trial_id: int) -> int:
    """The id of the trial's latest log line (0 when it has none): following from there prints only new lines."""
    last = 0
    for entry in client.stream_trial_logs(trial_id, tail=1):
        last = entry.id
    return last


def follow_task_logs(client: Client, task_id: int, follow: bool = True) -> None:
    """Print a command's output; with follow, reconnect after a master restart and keep going."""
    follow_logs(lambda after: client.stream_task_logs(task_id, follow=follow, after_id=after), follow,
                answers=lambda: master_answers(client))


def master_answers(client: Client) -> bool:
    """Whether the master answers a call now."""
    try:
        client.master_info(timeout=10)
    except StalwartError:
        return False
    return True


def follow_logs(stream: LogStream, follow: bool = True, after_id: int = 0, prefix: str = "",
                answers: Callable[[], bool] | None = None) -> None:
    """Print a log stream (a trial's or a task's); with follow, reconnect after a master restart. A stream that
    timed out while nothing was printed (a queued or quiet task) goes on at once and silently when `answers()` says
    the master answers: only a master that does not is reported as lost."""
    last = after_id
    while True:
        try:
            for entry in stream(last):
                last = entry.id
                print(prefix + format_line(entry), flush=True)
            return
        except MasterUnavailable as err:
            if not follow:
                raise
            if answers is not None and answers():
                time.sleep(0.2)
                continue
            output.info(f"{err}; reconnecting...")
            time.sleep(1.0)


def follow_experiment(client: Client, exp_id: int, *, after_id: int = 0) -> int:
    """Print the first trial's log lines (after `after_id`) until it ends, wait for the experiment to end and say how
    it ended; the exit status: 0 only when it COMPLETED."""
    trial_id = wait_for_first_trial(client, exp_id)
    if trial_id is not None:
        queued.wait_while_queued(client, "EXPERIMENT", exp_id, f"Experiment {exp_id}",
                                 hint=f"(`stalwart job list` shows the queue; `stalwart e kill {exp_id}` ends it.)")
        follow_trial_logs(client, trial_id, after_id=after_id)
    while True:
        d = client.get_experiment(exp_id)
        if d.experiment.state.terminal:
            break
        time.sleep(0.5)
    print_outcome(d)
    return 0 if d.experiment.state is ExperimentState.COMPLETED else 1


def print_outcome(d: ExperimentDetail) -> None:
    exp = d.experiment
    output.console.print(f"Experiment {exp.id} ended {exp.state.value}.")
    if exp.error_message:
        output.console.print(f"Reason: {exp.error_message}")
    for tr in d.trials:
        val = tr.latest_validation
        if val:
            output.console.print(f"Trial {tr.id} final validation (steps {val.steps_completed}): "
                                 f"{output.short_metrics(val.metrics, limit=20)}")
