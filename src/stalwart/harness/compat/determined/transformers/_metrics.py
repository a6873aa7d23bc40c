"""Which of a Trainer log's values DetCallback reports, and as which kind of metrics (Determined 0.38's rules).

A log with any `eval_...` key is a validation log, one with a `test_...` key a prediction log (not reported),
anything else a training log. The Trainer's rounded `epoch` and its speed figures (`..._runtime`,
`..._per_second`, `..._compilation_time`) are dropped; `filter_metrics` keeps only the names that contain
one of its strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

EVAL = "eval_"
TEST = "test_"
TRAIN = "train_"

SPEED_SUFFIXES = ("_runtime", "_per_second", "_compilation_time")


def get_metric_type(logs: Mapping[str, Any]) -> str:
    """EVAL, TEST or TRAIN: the kind of Trainer log `logs` is."""
    if any(name.startswith(EVAL) for name in logs):
        return EVAL
    if any(name.startswith(TEST) for name in logs):
        return TEST
    return TRAIN


def select_metrics(logs: Mapping[str, Any], filter_metrics: Sequence[str] | None) -> dict[str, Any]:
    """The values of `logs` to report: those `filter_metrics` picks (all without one), less epoch and speeds."""
    if filter_metrics:
        chosen = {name: value for name, value in logs.items() if any(part in name for part in filter_metrics)}
    else:
        chosen = dict(logs)
    chosen.pop("epoch", None)
    return {name: value for name, value in chosen.items() if not name.endswith(SPEED_SUFFIXES)}


def with_step_counts(metrics: dict[str, Any], global_step: int, epoch: float | None) -> dict[str, Any]:
    """`metrics` with `batches` (the Trainer's global step) and `epochs` (its fractional epoch) unless present:
    the time metrics ASHA and the other searchers read."""
    metrics.setdefault("batches", global_step)
    metrics.setdefault("epochs", epoch)
    return metrics
