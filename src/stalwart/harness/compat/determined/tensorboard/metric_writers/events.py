"""A MetricWriter on Stalwart's own event-file writer (`stalwart.harness.tensorboard`): no TensorFlow or torch."""

from __future__ import annotations

import pathlib
from typing import Any

from stalwart.harness.tensorboard import ScalarWriter

from .callback import MetricWriter


class EventFileWriter(MetricWriter):
    """Scalars into event files under `logdir`; each write is flushed as it is made."""

    def __init__(self, logdir: pathlib.Path) -> None:
        self.writer = ScalarWriter(logdir)

    def add_scalar(self, name: str, value: Any, step: int) -> None:
        self.writer.add_scalars(step, {name: float(value)})

    def reset(self) -> None:
        self.writer.close()

    def flush(self) -> None:
        """Nothing is buffered: ScalarWriter flushes every record."""
