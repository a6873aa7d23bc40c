"""What the Determined listener's detached-mode handlers translate: Determined's `core_v2` reports with its user's
session and names its trial by id or by task id, where Stalwart's own detached scripts report with their run's token.

So each report is filed under the trial's detached run (`run_of`): the live run its script started (StartTrial),
refused with a 409 naming what to do when there is none or the trial is the cluster's. The reports themselves go
through the master's own intake (metric rows, checkpoint registration, log rows), never a copy of it."""

from __future__ import annotations

import datetime
import re
from typing import Any

from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.api.models.determined.detached import ReportCheckpointRequest, ReportTrialMetricsRequest, TaskLogEntry
from stalwart.api.models.determined.trials import Trial
from stalwart.master.detached.experiments import require_detached
from stalwart.master.determined_api.trial_views import trials_of
from stalwart.master.experiments import intake
from stalwart.master.log_rows import Row as LogRow, log_rows
from stalwart.master.queries import experiments as experiment_rows, runs, trials as trial_rows
from stalwart.master.queries.rows import Conn, Row

TASK_ID = re.compile(r"^trial-(\d{1,10})$")
"""A trial's task id in Determined's messages, as `trial_views.trial_of` writes it: `trial-<id>`."""


def trial_message(conn: Conn, trial_id: int) -> Trial:
    """The trial as Determined's Trial message (404 when there is none)."""
    row = trial_rows.get(conn, trial_id)
    return trials_of(conn, experiment_rows.get(conn, row["experiment_id"]), [row])[0]


def trial_of_task(task_id: str | None, where: str) -> int:
    """The trial a task id names (`trial-<id>`: what CreateTrial answered as the trial's taskId)."""
    found = TASK_ID.match(task_id or "")
    if found is None:
        raise InvalidRequest(f"{where}: {task_id!r} names no trial; give the taskId CreateTrial answered "
                             "(trial-<id>)")
    return int(found.group(1))


def experiment_of_trial(conn: Conn, trial_id: int) -> int:
    return int(trial_rows.get(conn, trial_id)["experiment_id"])


def run_of(conn: Conn, trial_id: int, *, live: bool = True) -> Row:
    """The trial's detached run: its live one (`live`), else its latest, live or ended (the lines its script printed
    as it closed). 409 for a trial the cluster runs, or with no such run."""
    trial = trial_rows.get(conn, trial_id)
    try:
        require_detached(conn, int(trial["experiment_id"]))
    except InvalidStateError:
        raise InvalidStateError(f"trial {trial_id} is run by the cluster: only a detached trial (made by core_v2.init "
                                "outside the cluster) reports with a user's session") from None
    found = runs.live_of_trial(conn, trial_id) if live else runs.of_trial(conn, trial_id)
    detached = [r for r in found if r["unmanaged"]]
    if not detached:
        raise InvalidStateError(f"trial {trial_id} has no running detached run: its script starts one (StartTrial, "
                                "`POST /api/v1/trials/{id}/start`, which core_v2.init calls) before it reports")
    return detached[-1]


def when(text: str | None, where: str) -> float | None:
    """An RFC 3339 time as epoch seconds (None stays None: the master's time is used)."""
    if text is None:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidRequest(f"{where}: {text!r} is not an RFC 3339 time such as 2026-11-27T16:30:00Z") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.timestamp()


def metric_rows_of(trial_id: int, payload: ReportTrialMetricsRequest) -> list[dict[str, Any]]:
    """The metric rows of one report, checked by the master's own parser (batch metrics are not kept)."""
    metrics = payload.metrics
    if metrics.trialId != trial_id:
        raise InvalidRequest(f"metrics.trialId: {metrics.trialId} is not the trial of the path ({trial_id})")
    if metrics.stepsCompleted is None:
        raise InvalidRequest("metrics.stepsCompleted: required, the steps the trial had completed at this report")
    report: dict[str, Any] = {"group": payload.group, "steps_completed": metrics.stepsCompleted,
                              "trial_run_id": metrics.trialRunId, "metrics": metrics.metrics.avgMetrics}
    at = when(metrics.reportTime, "metrics.reportTime")
    if at is not None:
        report["report_time"] = at
    return intake.parse_reports(trial_id, {"reports": [report]})


def checkpoint_body(trial_id: int, payload: ReportCheckpointRequest) -> dict[str, Any]:
    """The checkpoint as the master's registration takes it (resources: path -> bytes, as integers)."""
    resources: dict[str, int] = {}
    for path, size in payload.resources.items():
        if isinstance(size, bool) or not str(size).isdigit():
            raise InvalidRequest(f"resources[{path!r}]: expected a size in bytes (an integer >= 0), got {size!r}")
        resources[path] = int(size)
    if payload.state not in (None, "STATE_COMPLETED"):
        raise InvalidRequest(f"state: {payload.state!r}; a reported checkpoint is STATE_COMPLETED (its files are "
                             "stored)")
    return {"trial_id": trial_id, "uuid": payload.uuid, "metadata": payload.metadata, "resources": resources}


def log_rows_of(entries: list[TaskLogEntry], received_at: float) -> list[LogRow]:
    """Printed lines as task_logs rows (filed under their run by the caller). Determined's shipper stamps every line
    with the time its shipping started, so the master's time of receipt is each line's time."""
    lines = [{"log": e.log, "stdtype": e.stdtype or "stdout",
              "rank_id": int(e.rank) if e.rank is not None and str(e.rank).isdigit() else None} for e in entries]
    return log_rows(lines, received_at)
