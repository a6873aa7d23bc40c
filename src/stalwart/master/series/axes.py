"""The x axes a series is drawn over: steps (x=batches), epochs (steps times epochs per batch) or report time."""

from __future__ import annotations

from collections.abc import Sequence

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.common import JsonObject

StepsPoint = tuple[float, float, float]
"""(steps, report time, value) of one point: a row's (queries.metrics.Point) or one a summary kept."""


def epoch_factor(exp_config: JsonObject, hparams: object) -> float:
    """Epochs per batch: global_batch_size / records_per_epoch; refuses x=epochs when either is unknown."""
    rpe = exp_config.get("records_per_epoch") or 0
    gbs = hparams.get("global_batch_size") if isinstance(hparams, dict) else None
    if not isinstance(gbs, (int, float)) or isinstance(gbs, bool) or gbs <= 0 or not rpe:
        raise InvalidRequest("x=epochs needs records_per_epoch in the experiment config and a global_batch_size "
                             "hyperparameter; use x=batches or x=time")
    return float(gbs) / float(rpe)


def xs(points: Sequence[StepsPoint], x: str, factor: float) -> list[float]:
    """The x of each (steps, report time, value) point on axis `x` (epochs are steps * factor)."""
    if x == "time":
        return [p[1] for p in points]
    if x == "epochs":
        return [p[0] * factor for p in points]
    return [float(p[0]) for p in points]


def steps_range(x: str, factor: float, x_min: float | None, x_max: float | None
                ) -> tuple[float | None, float | None]:
    """The steps that an x range on axis `x` covers (None: unbounded; a time range bounds no steps)."""
    if x == "batches":
        return x_min, x_max
    if x == "epochs":
        return (None if x_min is None else x_min / factor), (None if x_max is None else x_max / factor)
    return None, None
