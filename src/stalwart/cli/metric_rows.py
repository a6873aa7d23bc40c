"""`describe --metrics`: a trial's reported metrics as rows, one per (trial, steps), a column per scalar metric."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stalwart.client import Client

SCALARS = (int, float, str, bool)
"""Metric values a cell can show (NaN and the infinities travel as strings); lists and dicts are left out."""
Scalar = int | float | str | bool


@dataclass
class MetricTable:
    """Columns `Trial`, `Steps`, one per `group.metric`, then `Checkpoint`; `points` keeps every report for JSON."""

    columns: list[str]
    rows: list[list[Scalar | None]]
    points: list[dict[str, Any]] = field(default_factory=list)


def metric_table(client: Client, trial_ids: Iterable[int]) -> MetricTable:
    """Every metric report of these trials, and their checkpoints, merged by the steps they were reported at."""
    cells: dict[tuple[int, int], dict[str, Scalar]] = {}
    names: dict[str, None] = {}
    points: list[dict[str, Any]] = []
    for trial_id in trial_ids:
        for point in client.trial_metrics(trial_id).metrics:
            points.append({"trial_id": trial_id, **point.model_dump(mode="json", exclude_unset=True)})
            row = cells.setdefault((trial_id, point.steps_completed), {})
            for name, value in point.metrics.items():
                if isinstance(value, SCALARS):
                    column = f"{point.group}.{name}"
                    names.setdefault(column, None)
                    row[column] = value
        for ckpt in client.trial_checkpoints(trial_id).checkpoints:
            if ckpt.steps_completed is not None:
                cells.setdefault((trial_id, ckpt.steps_completed), {})["Checkpoint"] = ckpt.uuid
    metric_columns = sorted(names, key=lambda c: (not c.startswith("training."), c))
    rows = [[trial_id, steps, *(cell.get(c) for c in metric_columns), cell.get("Checkpoint")]
            for (trial_id, steps), cell in sorted(cells.items())]
    return MetricTable(["Trial", "Steps", *metric_columns, "Checkpoint"], rows, points)
