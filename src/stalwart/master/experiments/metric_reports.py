"""Metric reports from trials, checked completely (ranges, types, sizes) before they may join a group commit.

A report that passes here can be stored: integers fit their columns, names and sizes are bounded,
and NaN / +-Infinity are already in their stored form ("NaN", "Infinity", "-Infinity";
stalwart.api.metric_values). A bad report fails only its own request, with a 400 naming the field.
The limits are documented in docs/metrics.md.
"""

from __future__ import annotations

import math
from typing import Any

from stalwart.api.errors import InvalidRequest
from stalwart.api.metric_values import encode_float, number
from stalwart.api.models.trials import MAX_DEPTH, MAX_METRICS, MAX_NAME, MAX_REPORTS, MAX_VALUES
from stalwart.master.service import now

MAX_GROUP = 64  # characters of a group name (the column's size)
MAX_STEPS = 2**63 - 1  # steps_completed is a signed 64-bit column
MAX_RUN_ID = 2**31 - 1  # trial_run_id is a signed 32-bit column


def parse_reports(trial_id: int, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows to store for `{"reports": [...]}`, or InvalidRequest naming the first bad field."""
    reports = body.get("reports")
    if not isinstance(reports, list):
        raise InvalidRequest("reports: expected a list of {group, steps_completed, metrics}")
    if len(reports) > MAX_REPORTS:
        raise InvalidRequest(f"reports: at most {MAX_REPORTS} reports per request, got {len(reports)}; "
                             "send them in several requests")
    return [_row(trial_id, r, f"reports[{i}]") for i, r in enumerate(reports)]


def _row(trial_id: int, r: Any, where: str) -> dict[str, Any]:
    if not isinstance(r, dict):
        raise InvalidRequest(f"{where}: expected an object {{group, steps_completed, metrics}}")
    group = r.get("group")
    if not isinstance(group, str) or not group or len(group) > MAX_GROUP:
        raise InvalidRequest(f"{where}.group: expected a non-empty name of at most {MAX_GROUP} characters, "
                             f"got {_show(group)}")
    metrics = r.get("metrics")
    if not isinstance(metrics, dict):
        raise InvalidRequest(f"{where}.metrics: expected an object of metric name to value, got {_show(metrics)}")
    return {
        "trial_id": trial_id,
        "trial_run_id": _integer(r.get("trial_run_id", 0), MAX_RUN_ID, f"{where}.trial_run_id", default=0),
        "group_name": group,
        "steps_completed": _integer(r.get("steps_completed"), MAX_STEPS, f"{where}.steps_completed"),
        "metrics": _metrics(metrics, f"{where}.metrics"),
        "report_time": _time(r.get("report_time"), f"{where}.report_time"),
    }


def _integer(value: Any, top: int, where: str, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= top:
        raise InvalidRequest(f"{where}: expected an integer in 0..{top}, got {_show(value)}")
    return value


def _time(value: Any, where: str) -> float:
    if value is None:
        return now()
    seconds = number(value) if not isinstance(value, str) else None
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        raise InvalidRequest(f"{where}: expected a finite number >= 0 (seconds since the epoch), got {_show(value)}")
    return seconds


def _metrics(metrics: dict[str, Any], where: str) -> dict[str, Any]:
    """The metrics with non-finite floats encoded; the common flat case is checked inline (no copy)."""
    if len(metrics) > MAX_METRICS:
        raise InvalidRequest(f"{where}: at most {MAX_METRICS} metrics per report, got {len(metrics)}; "
                             "split them over several reports or groups")
    out = metrics
    count = [len(metrics)]
    for name, value in metrics.items():
        if len(name) > MAX_NAME:
            raise InvalidRequest(f"{where}: metric name {name[:40]!r}... is {len(name)} characters long; "
                                 f"names are at most {MAX_NAME}")
        cls = value.__class__
        if cls is float:
            if value - value == 0:
                continue
            new = encode_float(value)
        elif cls is int or cls is str or cls is bool or value is None:
            continue
        else:
            new = _nested(value, f"{where}.{name}", 1, count)
            if new is value:
                continue
        if out is metrics:
            out = dict(metrics)
        out[name] = new
    return out


def _nested(value: Any, where: str, depth: int, count: list[int]) -> Any:
    """A value inside a metric: the same value, or a copy with non-finite floats encoded."""
    cls = value.__class__
    if cls is float:
        return value if value - value == 0 else encode_float(value)
    if cls is int or cls is str or cls is bool or value is None:
        return value
    if cls is not dict and cls is not list:
        raise InvalidRequest(f"{where}: expected a JSON value, got {type(value).__name__}")
    if depth > MAX_DEPTH:
        raise InvalidRequest(f"{where}: metrics may nest dicts and lists at most {MAX_DEPTH} levels deep")
    count[0] += len(value)
    if count[0] > MAX_VALUES:
        raise InvalidRequest(f"{where}: more than {MAX_VALUES} values in one report (nested ones included)")
    if cls is list:
        items = [_nested(v, f"{where}[{i}]", depth + 1, count) for i, v in enumerate(value)]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    for key in value:
        if len(key) > MAX_NAME:
            raise InvalidRequest(f"{where}: key {key[:40]!r}... is {len(key)} characters long; "
                                 f"keys are at most {MAX_NAME}")
    mapped = {k: _nested(v, f"{where}.{k}", depth + 1, count) for k, v in value.items()}
    return value if all(mapped[k] is v for k, v in value.items()) else mapped


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
