"""Training units: Batch(n) and Epoch(n) periods or schedules, and conversion from config lengths."""

from __future__ import annotations

import sys
from collections import abc

from stalwart.config import Length, parse_length


class TrainUnit:
    """A period (`value` an int: every `value` units) or a schedule (`value` a container of unit counts)."""

    def __init__(self, value: int | abc.Container[int]) -> None:
        if isinstance(value, (bool, str, bytes)) or not isinstance(value, (int, abc.Container)):
            raise TypeError(f"{type(self).__name__} takes an int or a container of ints, got {value!r}")
        self.value = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, TrainUnit) and other.value == self.value

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.value)))

    def should_stop(self, step_num: int) -> bool:
        """True when `step_num` completed units hit this period or schedule."""
        value = self.value
        if isinstance(value, int):
            if value < 1:
                return True
            return step_num != 0 and step_num % value == 0
        return step_num in value


class Batch(TrainUnit):
    """A number of batches, e.g. `Batch(100)`: every 100 batches, or 100 batches long."""

    @staticmethod
    def _from_records(records: int, global_batch_size: int) -> Batch:
        return Batch(max(records // global_batch_size, 1))


class Epoch(TrainUnit):
    """A number of epochs (an epoch is one pass over the training loader, as its length says)."""


NEVER = Batch(sys.maxsize)


def from_length(length: Length | dict[str, int] | int, global_batch_size: int | None = None, *,
                records_per_epoch: int = 0, zero_is_never: bool = False) -> TrainUnit | None:
    """A config length (`{batches|records|epochs: n}` or a Length) as a TrainUnit.

    Records are converted with `global_batch_size`; epochs too when `records_per_epoch` is set (else
    an epoch is one pass over the training loader). With `zero_is_never`, a length of 0 means
    "never" and gives None (how `min_validation_period: {batches: 0}` reads).
    """
    if not isinstance(length, Length):
        length = parse_length(length, "length", allow_bare_int=True)
    if length.value == 0 and zero_is_never:
        return None
    if length.unit == "batches":
        return Batch(length.value)
    if length.unit == "epochs":
        if records_per_epoch > 0 and global_batch_size:
            return Batch._from_records(length.value * records_per_epoch, int(global_batch_size))
        return Epoch(length.value)
    if not global_batch_size:
        raise ValueError(
            f"a length of {length.value} records needs hyperparameters.global_batch_size to be converted to batches"
        )
    return Batch._from_records(length.value, int(global_batch_size))
