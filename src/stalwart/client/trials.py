"""Trials: describe, kill, checkpoints, metrics, logs and series (users); the calls a running trial makes.

The trial-side reports are hot paths: `report_metrics` sends the reports as they are (the master validates
them against `trials.ReportMetrics`), so a wide report is not copied or checked twice on its way out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from stalwart.api.models import allocations, checkpoints, common, series, trials
from stalwart.client.endpoints import Api, body, endpoint

T = "/api/v1/trials"
AL = "/api/v1/allocations"

DESCRIBE = endpoint("GET", T + "/{trial_id}", trials.TrialDetail)
KILL = endpoint("POST", T + "/{trial_id}/kill", common.Empty)
CHECKPOINTS = endpoint("GET", T + "/{trial_id}/checkpoints", checkpoints.CheckpointList)
METRICS = endpoint("GET", T + "/{trial_id}/metrics", trials.MetricList)
LOGS = endpoint("GET", T + "/{trial_id}/logs", trials.LogEntry)
SERIES = endpoint("GET", T + "/{trial_id}/metrics/series", series.TrialSeries)
REPORT_METRICS = endpoint("POST", T + "/{trial_id}/metrics", trials.Accepted, trials.ReportMetrics)
REPORT_PROGRESS = endpoint("POST", T + "/{trial_id}/progress", common.Empty, trials.ReportProgress)
REPORT_EARLY_EXIT = endpoint("POST", T + "/{trial_id}/early_exit", common.Empty, trials.ReportEarlyExit)
SEARCHER_OPERATION = endpoint("GET", T + "/{trial_id}/searcher/operation", trials.SearcherOperation)
REGISTER_CHECKPOINT = endpoint("POST", "/api/v1/checkpoints", checkpoints.CheckpointEnvelope,
                               checkpoints.RegisterCheckpoint)
PREEMPTION = endpoint("GET", AL + "/{allocation_id}/signals/preemption", allocations.Preemption)
ACK_PREEMPTION = endpoint("POST", AL + "/{allocation_id}/signals/ack_preemption", common.Empty)


class TrialsApi(Api):
    # -- users ------------------------------------------------------------------------------------
    def get_trial(self, trial_id: int) -> trials.TrialDetail:
        return self.call(DESCRIBE, path={"trial_id": trial_id})

    def kill_trial(self, trial_id: int) -> common.Empty:
        return self.call(KILL, path={"trial_id": trial_id}, json_body={})

    def trial_checkpoints(self, trial_id: int) -> checkpoints.CheckpointList:
        return self.call(CHECKPOINTS, path={"trial_id": trial_id})

    def trial_metrics(self, trial_id: int, *, group: str | None = None, after_steps: int | None = None,
                      limit: int | None = None) -> trials.MetricList:
        return self.call(METRICS, path={"trial_id": trial_id},
                         params={"group": group, "after_steps": after_steps, "limit": limit})

    def trial_series(self, trial_id: int, *, group: str = "validation", metric: str | None = None,
                     x_axis: series.XAxis | None = None, max_points: int | None = None) -> series.TrialSeries:
        return self.call(SERIES, path={"trial_id": trial_id},
                         params={"group": group, "metric": metric, "x": x_axis, "max_points": max_points})

    def stream_trial_logs(self, trial_id: int, *, follow: bool = False, after_id: int = 0,
                          levels: list[str] | None = None, since: float | str | None = None, grep: str | None = None,
                          head: int | None = None, tail: int | None = None) -> Iterator[trials.LogEntry]:
        """The trial's log lines after `after_id`; with `follow`, new lines as they come until the trial ends.
        Filtered by the master: `levels` (any of), `since` (epoch seconds or an ISO 8601 time), `grep` (a
        substring), then the first `head` (not with `follow`) or last `tail` lines."""
        return self.call_stream(LOGS, path={"trial_id": trial_id}, params={
            "follow": str(follow).lower(), "after_id": after_id, "levels": levels or None,
            "since": None if since is None else str(since), "grep": grep, "head": head, "tail": tail})

    # -- from inside the trial (allocation token) ------------------------------------------------------
    def report_metrics(self, trial_id: int, reports: Sequence[Mapping[str, Any]]) -> trials.Accepted:
        """Each report as `trials.MetricReport` has it: group, steps_completed, metrics, trial_run_id,
        report_time (metric values already JSON-ready). Sent unchanged; the master checks them."""
        return self.call(REPORT_METRICS, path={"trial_id": trial_id}, json_body={"reports": reports})

    def report_progress(self, trial_id: int, progress: float) -> common.Empty:
        return self.call(REPORT_PROGRESS, path={"trial_id": trial_id},
                         json_body=body(trials.ReportProgress, progress=progress))

    def report_early_exit(self, trial_id: int, reason: str) -> common.Empty:
        return self.call(REPORT_EARLY_EXIT, path={"trial_id": trial_id},
                         json_body=body(trials.ReportEarlyExit, reason=reason))

    def searcher_operation(self, trial_id: int) -> trials.SearcherOperation:
        return self.call(SEARCHER_OPERATION, path={"trial_id": trial_id})

    def register_checkpoint(self, trial_id: int, uuid: str, *, resources: dict[str, int] | None = None,
                            metadata: dict[str, Any] | None = None) -> checkpoints.CheckpointEnvelope:
        return self.call(REGISTER_CHECKPOINT, json_body=body(
            checkpoints.RegisterCheckpoint, trial_id=trial_id, uuid=uuid, resources=resources, metadata=metadata))

    def preemption_signal(self, allocation_id: str, *, wait_s: float = 0,
                          timeout: float | None = None) -> allocations.Preemption:
        """Whether the master wants this allocation to stop; it answers at once when it does, else after
        `wait_s` seconds (a long poll; `timeout` bounds the whole call)."""
        return self.call(PREEMPTION, path={"allocation_id": allocation_id}, params={"timeout_seconds": wait_s},
                         timeout=timeout)

    def ack_preemption(self, allocation_id: str) -> common.Empty:
        return self.call(ACK_PREEMPTION, path={"allocation_id": allocation_id}, json_body={})
