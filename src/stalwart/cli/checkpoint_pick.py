"""Choosing checkpoints by a validation metric: each checkpoint is scored by its trial's validation at its steps."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from stalwart.api.models.checkpoints import Checkpoint
from stalwart.client import Client


@dataclass(frozen=True)
class Scored:
    checkpoint: Checkpoint
    value: float | None
    """The metric's validation value at the checkpoint's steps; None when there was none (or it is not a number)."""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)  # "NaN" and the infinities travel as strings
    except ValueError:
        return None
    return None if math.isnan(number) else number


def rank_checkpoints(client: Client, checkpoints: Iterable[Checkpoint], metric: str | None,
                     smaller_is_better: bool) -> list[Scored]:
    """COMPLETED checkpoints, best first by `metric` (validations reported at their steps); those without a
    value come last, the most trained first."""
    usable = [c for c in checkpoints if c.state == "COMPLETED" and c.trial_id is not None]
    validations: dict[int, dict[int, float | None]] = {}
    for trial_id in {c.trial_id for c in usable if c.trial_id is not None}:
        points = client.trial_metrics(trial_id, group="validation").metrics
        validations[trial_id] = {p.steps_completed: _number(p.metrics.get(metric)) if metric else None
                                 for p in points}
    scored = [Scored(c, validations.get(c.trial_id or 0, {}).get(c.steps_completed or 0)) for c in usable]
    valued: list[tuple[float, Scored]] = [(s.value, s) for s in scored if s.value is not None]
    valued.sort(key=lambda pair: pair[0] if smaller_is_better else -pair[0])
    without = sorted((s for s in scored if s.value is None),
                     key=lambda s: (-(s.checkpoint.steps_completed or 0), -(s.checkpoint.report_time or 0.0)))
    return [s for _, s in valued] + without
