"""Trials: describe, metrics, logs, and the calls a running trial makes (allocation token)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from stalwart.api.models.allocations import Allocation
from stalwart.api.models.checkpoints import Checkpoint
from stalwart.api.models.common import (
    Fraction, GroupName, Id, JsonObject, Metrics, Request, Response, RunId, Steps, Timestamp,
)
from stalwart.api.states import TrialState

MAX_REPORTS = 10_000  # master/metric_reports.py
MAX_METRICS = 10_000


class LatestValidation(Response):
    steps_completed: Steps
    metrics: Metrics


class Trial(Response):
    id: Id
    experiment_id: Id
    request_id: Optional[str] = Field(default=None, max_length=64)
    hparams: JsonObject
    seed: int
    state: TrialState
    restarts: int = Field(ge=0)
    runs: int = Field(ge=0)
    target_length: Optional[int] = Field(default=None, ge=0)
    progress: Optional[Fraction] = None
    early_exit: Optional[str] = None
    error_message: Optional[str] = None
    created_at: Timestamp
    ended_at: Optional[Timestamp] = None
    steps_completed: Optional[Steps] = None
    latest_validation: Optional[LatestValidation] = None


class TrialDetail(Response):
    trial: Trial
    runs: list[Allocation]
    latest_checkpoint: Optional[Checkpoint] = None


class MetricPoint(Response):
    group: GroupName
    steps_completed: Steps
    metrics: Metrics
    trial_run_id: Optional[RunId] = None
    report_time: Optional[Timestamp] = None


class MetricList(Response):
    metrics: list[MetricPoint]


class LogEntry(Response):
    """One line of GET /api/v1/trials/{id}/logs (NDJSON) and of the UI's log view."""

    id: Id
    log: str
    timestamp: Optional[Timestamp] = None
    level: Optional[str] = None
    stdtype: Optional[str] = None
    agent_id: Optional[str] = None
    rank_id: Optional[int] = None
    source: Optional[str] = None


class MetricReport(Request):
    group: GroupName
    steps_completed: Steps
    metrics: dict[str, object] = Field(max_length=MAX_METRICS)
    trial_run_id: RunId = 0
    report_time: Optional[Timestamp] = None


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
    length: Optional[int] = Field(default=None, ge=0)
    unit: Optional[Literal["batches", "records", "epochs"]] = None
    completed: bool
