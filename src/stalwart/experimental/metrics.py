"""Trial metrics as the SDK gives them: `TrialMetrics` reports, plain rows, and a pandas DataFrame.

`metric_rows` needs nothing but the standard library; `metrics_frame` needs pandas (`pip install pandas`) and
says so when it is missing. Non-finite values, which travel as "NaN" / "Infinity" / "-Infinity", come back as
floats in both.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from stalwart.api.metric_values import NON_FINITE
from stalwart.api.models.trials import MetricPoint
from stalwart.client import Client

PAGE = 5_000  # reports per request when reading a trial's metrics
ROW_KEYS = ("trial_id", "trial_run_id", "group", "steps_completed", "end_time")


@dataclass(frozen=True)
class TrialMetrics:
    """One report of a trial (Determined's `TrialMetrics`): its group, steps and metric values."""

    trial_id: int
    trial_run_id: int
    steps_completed: int
    end_time: float | None
    metrics: dict[str, Any]
    group: str

    @property
    def total_batches(self) -> int:
        """Determined's older name of `steps_completed`."""
        return self.steps_completed

    def row(self) -> dict[str, Any]:
        """The report as one flat row: trial_id, trial_run_id, group, steps_completed, end_time, then each metric."""
        row: dict[str, Any] = {"trial_id": self.trial_id, "trial_run_id": self.trial_run_id, "group": self.group,
                               "steps_completed": self.steps_completed, "end_time": self.end_time}
        for name, value in self.metrics.items():
            row[name if name not in ROW_KEYS else f"metric.{name}"] = value
        return row


class TrainingMetrics(TrialMetrics):
    """A report of the "training" group (Determined's deprecated class; `TrialMetrics` is the same report)."""

    def __init__(self, total_batches: int | None = None, **fields: Any) -> None:
        if total_batches is not None:
            fields["steps_completed"] = total_batches
        super().__init__(**{**fields, "group": "training"})


class ValidationMetrics(TrialMetrics):
    """A report of the "validation" group (Determined's deprecated class; `TrialMetrics` is the same report)."""

    def __init__(self, total_batches: int | None = None, **fields: Any) -> None:
        if total_batches is not None:
            fields["steps_completed"] = total_batches
        super().__init__(**{**fields, "group": "validation"})


def iter_legacy_metrics(client: Client, trial_ids: Iterable[int], group: str) -> Iterator[TrialMetrics]:
    """The "training" or "validation" reports of these trials as Determined's deprecated classes of that group."""
    kind = TrainingMetrics if group == "training" else ValidationMetrics
    for trial_id in trial_ids:
        for report in iter_trial_metrics(client, trial_id, group):
            yield kind(trial_id=report.trial_id, trial_run_id=report.trial_run_id,
                       steps_completed=report.steps_completed, end_time=report.end_time, metrics=report.metrics)


def iter_trial_metrics(client: Client, trial_id: int, group: str | None) -> Iterator[TrialMetrics]:
    """Every report of one trial (of one group, or all groups), by steps, a page at a time. A full page may end
    inside the reports of one steps value: those come again at the start of the next page (a bigger one when a
    whole page shares its steps)."""
    after, limit = -1, PAGE
    while True:
        page = client.trial_metrics(trial_id, group=group, after_steps=after, limit=limit).metrics
        if len(page) < limit:
            yield from (_report(trial_id, p) for p in page)
            return
        last = page[-1].steps_completed
        done = [p for p in page if p.steps_completed < last]
        if not done:
            limit *= 2
            continue
        yield from (_report(trial_id, p) for p in done)
        after, limit = last - 1, PAGE


def _report(trial_id: int, point: MetricPoint) -> TrialMetrics:
    return TrialMetrics(trial_id=trial_id, trial_run_id=point.trial_run_id or 0, steps_completed=point.steps_completed,
                        end_time=point.report_time, metrics={k: _decoded(v) for k, v in point.metrics.items()},
                        group=point.group)


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    return value


def metric_rows(reports: Iterable[TrialMetrics]) -> list[dict[str, Any]]:
    """The reports as plain rows (dicts), one per report; see `TrialMetrics.row`."""
    return [r.row() for r in reports]


def metrics_frame(reports: Iterable[TrialMetrics]) -> Any:
    """The reports as a `pandas.DataFrame`: one row per report, one column per metric (NaN where a report lacks
    it)."""
    try:
        pd = importlib.import_module("pandas")
    except ImportError:
        raise ImportError("metrics_frame needs pandas (pip install pandas); metric_rows gives the same rows "
                          "as plain dicts") from None
    rows = metric_rows(reports)
    return pd.DataFrame(rows, columns=_columns(rows))


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    names = dict.fromkeys(ROW_KEYS)
    for row in rows:
        names.update(dict.fromkeys(row))
    return list(names)
