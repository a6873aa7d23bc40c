"""How a TFKerasTrial's config lengths become one `model.fit()` call.

Every length (searcher.max_length or this trial's searcher target, min_validation_period,
min_checkpoint_period, scheduling_unit) is converted to batches; a Keras epoch is then their greatest common
divisor, so that validations, checkpoints, metric reports and stop checks all fall on epoch ends (and so does
where a resumed trial stopped: its target may have grown since, as with ASHA's promotions).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from stalwart.config import views
from stalwart.config.lengths import Length, parse_length

DEFAULT_SCHEDULING_UNIT = 100


@dataclasses.dataclass(frozen=True)
class FitPlan:
    """One fit() call: `epochs` Keras epochs of `batches_per_epoch` batches each."""

    batches_per_epoch: int
    epochs: int
    validation_epochs: list[int]
    """1-based epochs after which to validate (always the last one)."""
    checkpoint_epochs: int
    """Save every this many epochs; 0: only when training ends or stops."""
    report_period: int
    """Report training metrics every this many batches (the scheduling unit)."""


def to_batches(length: Length, *, global_batch_size: int, records_per_epoch: int,
               loader_batches: int | None, key: str) -> int:
    """`length` in batches; an epoch is records_per_epoch records when set, else one pass over the loader."""
    if length.unit == "batches":
        return length.value
    if length.unit == "records":
        return max(length.value // global_batch_size, 1)
    if records_per_epoch > 0:
        return max(length.value * records_per_epoch // global_batch_size, 1)
    if loader_batches is None:
        raise ValueError(f"{key} is in epochs, but the training loader's length is unknown (an endless "
                         "tf.data.Dataset?): set records_per_epoch in the experiment config")
    return length.value * loader_batches


def _max_length(config: Mapping[str, Any], target_length: int | None) -> Length:
    length = views.max_length(config)
    if length is None:
        time = views.max_time(config)
        if time is None or time[1] not in ("batches", "epochs"):
            raise ValueError("a TFKerasTrial needs its training length: searcher.max_length, or searcher.max_time "
                             "with time_metric batches or epochs")
        length = Length(time[1], time[0])
    return Length(length.unit, int(target_length)) if target_length is not None else length


def _period(config: Mapping[str, Any], key: str, convert: Any) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    length = parse_length(value, key, allow_bare_int=True)
    return convert(length, key) if length.value > 0 else None


def fit_plan(config: Mapping[str, Any], *, global_batch_size: int, loader_batches: int | None,
             target_length: int | None = None, batches_done: int = 0) -> FitPlan:
    """The fit() call that trains this trial to its length, validating and checkpointing as configured.

    `batches_done` (a resumed trial's) is a whole number of epochs too, whatever the length was when it was saved.
    """
    rpe = views.records_per_epoch(config)

    def convert(length: Length, key: str) -> int:
        return to_batches(length, global_batch_size=global_batch_size, records_per_epoch=rpe,
                          loader_batches=loader_batches, key=key)

    total = convert(_max_length(config, target_length), "searcher.max_length")
    validation = _period(config, "min_validation_period", convert)
    checkpoint = _period(config, "min_checkpoint_period", convert)
    scheduling_unit = int(config.get("scheduling_unit") or DEFAULT_SCHEDULING_UNIT)
    chunk = math.gcd(total, batches_done, *(p for p in (validation, checkpoint, scheduling_unit) if p))
    epochs = total // chunk
    validations = set(range(validation // chunk, epochs + 1, validation // chunk)) if validation else set()
    return FitPlan(
        batches_per_epoch=chunk, epochs=epochs, validation_epochs=sorted(validations | {epochs}),
        checkpoint_epochs=checkpoint // chunk if checkpoint else 0, report_period=scheduling_unit,
    )
