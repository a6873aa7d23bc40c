"""Trial rows, their reports and checkpoints as Determined's `Trial` and workload messages (det-wire.md §2.3, §3.2).

`trials_of(conn, experiment_row, trial_rows)` translates a trial list in a few queries per trial; `workloads_of`
lists one trial's training and validation reports and checkpoints by batch, as Determined's GetTrialWorkloads does.
An ACTIVE trial shows as QUEUED, STARTING or RUNNING by its live runs (experiment_views.state_name)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast, get_args

from stalwart.api.models.determined.trials import (
    CheckpointStateName,
    CheckpointWorkload,
    Metrics,
    MetricsWorkload,
    Trial,
    TrialStateName,
    WorkloadContainer,
)
from stalwart.master import views
from stalwart.master.determined_api.experiment_views import checkpoint_totals, state_name
from stalwart.master.determined_api.wire import rfc3339
from stalwart.master.queries import (
    checkpoints as checkpoint_rows,
    metrics as metric_rows,
    runs,
)
from stalwart.master.queries.rows import Conn, Row

MAX_WORKLOADS = 1_000_000
"""The most reports one workloads answer reads (a page of them is answered)."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def metrics_workload(steps: int, values: Mapping[str, Any] | None, at: float | None = None) -> MetricsWorkload:
    """A report at `steps` batches as a MetricsWorkload (no per-batch values, no input count kept)."""
    return MetricsWorkload(endTime=rfc3339(at), metrics=Metrics(avgMetrics=dict(values or {}), batchMetrics=[]),
                           numInputs=0, totalBatches=int(steps))


def trial_state(name: str) -> TrialStateName:
    """`name` checked against Determined's trialv1.State (an unknown value stops its client in its decoder)."""
    return cast(TrialStateName, name) if name in get_args(TrialStateName) else "STATE_UNSPECIFIED"


def checkpoint_state(state: str) -> CheckpointStateName:
    name = f"STATE_{state}"
    return cast(CheckpointStateName, name) if name in get_args(CheckpointStateName) else "STATE_UNSPECIFIED"


def checkpoint_workload(row: Mapping[Any, Any]) -> CheckpointWorkload:
    return CheckpointWorkload(
        uuid=row["uuid"], endTime=rfc3339(row["report_time"]), state=checkpoint_state(str(row["state"])),
        resources={k: str(int(v)) for k, v in (row["resources"] or {}).items()},
        totalBatches=int(row["steps_completed"]), metadata=dict(row["metadata"] or {}))


def best_validations(conn: Conn, trial_ids: list[int], metric: str | None,
                     smaller_is_better: bool) -> dict[int, tuple[int, dict[str, Any]]]:
    """Each trial's best validation report of `metric`: trial id -> (steps, metrics)."""
    best: dict[int, tuple[int, dict[str, Any]]] = {}
    if not metric or not trial_ids:
        return best
    for r in metric_rows.validations_of_trials(conn, trial_ids):
        value = r["metrics"].get(metric)
        if not _number(value):
            continue
        held = best.get(r["trial_id"])
        if held is None or (value < held[1][metric] if smaller_is_better else value > held[1][metric]):
            best[r["trial_id"]] = (int(r["steps_completed"]), r["metrics"])
    return best


def trial_of(row: Row, summary: Mapping[str, Any], best: tuple[int, dict[str, Any]] | None, metric: str | None,
             run_states: list[str], checkpoints: list[Row]) -> Trial:
    """One trial row as Determined's Trial message."""
    latest = summary.get("latest_validation")
    latest_workload = None
    if latest is not None and latest.get("steps_completed") is not None:
        latest_workload = metrics_workload(latest["steps_completed"], latest.get("metrics"))
    count, size = checkpoint_totals(checkpoints)
    kept = [c for c in checkpoints if c["state"] == "COMPLETED"]
    value = best[1].get(metric) if best is not None and metric else None
    task_id = f"trial-{row['id']}"
    return Trial(
        id=int(row["id"]), experimentId=int(row["experiment_id"]), startTime=rfc3339(row["created_at"]) or "",
        endTime=rfc3339(row["ended_at"]), state=trial_state(state_name(row["state"], run_states)),
        restarts=int(row["restarts"]), hparams=dict(row["hparams"] or {}),
        totalBatchesProcessed=int(summary.get("steps_completed") or 0),
        bestValidation=metrics_workload(best[0], best[1]) if best is not None else None,
        latestValidation=latest_workload, bestCheckpoint=checkpoint_workload(kept[-1]) if kept else None,
        runnerState="", wallClockTime=0.0, warmStartCheckpointUuid=row.get("source_checkpoint_uuid") or "",
        taskId=task_id, taskIds=[task_id], totalCheckpointSize=str(size), checkpointCount=count,
        searcherMetricValue=float(value) if value is not None and _number(value) else None, summaryMetrics={},
        metadata={},
    )


def trials_of(conn: Conn, experiment: Row, rows: list[Row]) -> list[Trial]:
    """An experiment's trial rows as Determined's messages, in the same order."""
    ids = [int(r["id"]) for r in rows]
    searcher = experiment["config"].get("searcher") or {}
    metric = searcher.get("metric")
    summaries = views.trial_summaries(conn, ids)
    best = best_validations(conn, ids, metric, bool(searcher.get("smaller_is_better", True)))
    out = []
    for row in rows:
        live = [str(r["state"]) for r in runs.live_of_trial(conn, int(row["id"]))]
        out.append(trial_of(row, summaries.get(int(row["id"]), {}), best.get(int(row["id"])), metric, live,
                            checkpoint_rows.of_trial(conn, int(row["id"]))))
    return out


def workloads_of(conn: Conn, trial_id: int) -> list[WorkloadContainer]:
    """A trial's training and validation reports and its checkpoints, by batch (reports before a checkpoint at the
    same batch); other report groups are left out, as Determined's workloads have none."""
    found: list[tuple[int, int, WorkloadContainer]] = []
    for r in metric_rows.page(conn, trial_id, group=None, after_steps=-1, limit=MAX_WORKLOADS):
        work = metrics_workload(r["steps_completed"], r["metrics"], r["report_time"])
        if r["group_name"] == "training":
            found.append((work.totalBatches, 0, WorkloadContainer(training=work, validation=None, checkpoint=None)))
        elif r["group_name"] == "validation":
            found.append((work.totalBatches, 1, WorkloadContainer(training=None, validation=work, checkpoint=None)))
    for c in checkpoint_rows.of_trial(conn, trial_id):
        found.append((int(c["steps_completed"]), 2,
                      WorkloadContainer(training=None, validation=None, checkpoint=checkpoint_workload(c))))
    found.sort(key=lambda f: (f[0], f[1]))
    return [w for _, _, w in found]
