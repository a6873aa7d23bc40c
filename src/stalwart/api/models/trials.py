"""Trials: describe, metrics, logs, and the calls a running trial makes (allocation token)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from stalwart.api.models.allocations import Allocation
from stalwart.api.models.checkpoints import Checkpoint
from stalwart.api.models.common import (
    Fraction,
    GroupName,
    Id,
    JsonObject,
    MetricName,
    Metrics,
    Request,
    Response,
    RunId,
    Steps,
    Timestamp,
)
from stalwart.api.states import TrialState

# The limits of one POST /api/v1/trials/{id}/metrics (docs/metrics.md). The master's fast validator
# (master/experiments/metric_reports.py) enforces the same ones and accepts exactly the bodies ReportMetrics accepts.
MAX_REPORTS = 10_000  # per request; the harness sends at most 5,000
MAX_METRICS = 10_000  # metric names at the top of one report
MAX_VALUES = 100_000  # values in one report, nested ones included
MAX_NAME = 256  # characters of a metric name, and of a key inside a nested metric
MAX_DEPTH = 16  # dicts and lists inside one metric


class LatestValidation(Response):
    steps_completed: Steps
    metrics: Metrics


class Trial(Response):
    id: Id
    experiment_id: Id
    request_id: str | None = Field(default=None, max_length=64)
    hparams: JsonObject
    seed: int
    state: TrialState
    restarts: int = Field(ge=0)
    runs: int = Field(ge=0)
    target_length: int | None = Field(default=None, ge=0)
    progress: Fraction | None = None
    early_exit: str | None = None
    error_message: str | None = None
    created_at: Timestamp
    ended_at: Timestamp | None = None
    steps_completed: Steps | None = None
    latest_validation: LatestValidation | None = None
    log_policy_matched: str | None = Field(default=None, max_length=256,
                                           description="the name of the last log policy its logs matched")


class LogPolicyMatch(Response):
    """A run's first line that matched a log policy (docs/logs.md): which policy, what it does, on which agent."""

    policy_name: str | None = Field(default=None, max_length=256)
    pattern: str
    action: str | None = Field(default=None, description="cancel_retries, exclude_node, or null: a label only")
    allocation_id: str = Field(max_length=64)
    agent_id: str | None = Field(default=None, max_length=128)
    log: str
    matched_at: Timestamp


class TrialDetail(Response):
    trial: Trial
    runs: list[Allocation]
    latest_checkpoint: Checkpoint | None = None
    log_policy_matches: list[LogPolicyMatch] = Field(default_factory=list)


class MetricPoint(Response):
    group: GroupName
    steps_completed: Steps
    metrics: Metrics
    trial_run_id: RunId | None = None
    report_time: Timestamp | None = None


class MetricList(Response):
    metrics: list[MetricPoint]


class LogEntry(Response):
    """One line of GET /api/v1/trials/{id}/logs (NDJSON) and of the UI's log view."""

    id: Id
    log: str
    timestamp: Timestamp | None = None
    level: str | None = None
    stdtype: str | None = None
    agent_id: str | None = None
    rank_id: int | None = None
    source: str | None = None


class MetricReport(Request):
    """One report. Integers and times are strict (no strings, no booleans, no 3.0 for 3); a metric's value is any
    JSON value (NaN and the infinities included: they are stored as "NaN", "Infinity", "-Infinity"), nesting
    dicts and lists at most MAX_DEPTH deep, MAX_VALUES values in all, keys at most MAX_NAME characters."""

    group: Annotated[GroupName, Field(strict=True)]
    steps_completed: Annotated[Steps, Field(strict=True)]
    metrics: dict[MetricName, Any] = Field(max_length=MAX_METRICS)
    trial_run_id: Annotated[RunId, Field(strict=True)] | None = Field(default=0, description="null means 0")
    report_time: Annotated[Timestamp, Field(strict=True)] | None = Field(
        default=None, description="null or absent: the time the master receives the report")

    @field_validator("metrics")
    @classmethod
    def _bounded(cls, metrics: dict[str, Any]) -> dict[str, Any]:
        count = len(metrics)
        stack: list[tuple[Any, int]] = [(v, 1) for v in metrics.values()]
        while stack:
            value, depth = stack.pop()
            if not isinstance(value, (dict, list)):
                continue
            if depth > MAX_DEPTH:
                raise ValueError(f"metrics may nest dicts and lists at most {MAX_DEPTH} levels deep")
            count += len(value)
            if count > MAX_VALUES:
                raise ValueError(f"more than {MAX_VALUES} values in one report (nested ones included)")
            if isinstance(value, dict):
                if any(len(k) > MAX_NAME for k in value):
                    raise ValueError(f"keys inside a metric are at most {MAX_NAME} characters")
                stack.extend((v, depth + 1) for v in value.values())
            else:
                stack.extend((v, depth + 1) for v in value)
        return metrics


class ReportMetrics(Request):
    """POST /api/v1/trials/{id}/metrics."""

    reports: list[MetricReport] = Field(max_length=MAX_REPORTS)


class Accepted(Response):
    accepted: int = Field(ge=0)


class ReportProgress(Request):
    progress: Fraction


class ReportEarlyExit(Request):
    reason: str = Field(max_length=64, description="Determined's early-exit reason, e.g. INVALID_HP")


class SearcherOperation(Response):
    length: int | None = Field(default=None, ge=0)
    unit: Literal["batches", "records", "epochs"] | None = None
    completed: bool
