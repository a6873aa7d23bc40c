"""`MetricWriter` and `BatchMetricWriter`, as in Determined 0.38.1's `metric_writers/callback.py`.

BatchMetricWriter writes scalar metrics under `Determined/<name>`: each batch's at its own step, then the
averages not among them at `steps_completed`; validation metrics get a `val_` prefix unless they start with
`val`. The writer is reset (a new event file) when a second has turned since the last flush.
"""

from __future__ import annotations

import abc
import logging
import time
from typing import Any

from ... import util

logger = logging.getLogger("determined.tensorboard")


class MetricWriter(abc.ABC):
    @abc.abstractmethod
    def add_scalar(self, name: str, value: Any, step: int) -> None:
        """Write one scalar summary."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Close the current event file; the next write starts a new one."""

    @abc.abstractmethod
    def flush(self) -> None:
        """Write what is buffered."""


class BatchMetricWriter:
    def __init__(self, writer: MetricWriter) -> None:
        self.writer = writer
        self._last_flush_ts: float | None = None

    def _maybe_write_metric(self, metric_key: str, metric_val: Any, step: int) -> None:
        if util.is_numerical_scalar(metric_val):
            self.writer.add_scalar("Determined/" + metric_key, metric_val, step)

    def on_train_step_end(self, steps_completed: int, metrics: dict[str, Any],
                          batch_metrics: list[dict[str, Any]] | None = None) -> None:
        logger.debug("Write training metrics for TensorBoard")
        self._maybe_reset()
        written: set[str] = set()
        batches = batch_metrics or []
        for index, batch in enumerate(batches):
            for name, value in batch.items():
                self._maybe_write_metric(name, value, steps_completed - len(batches) + index)
                written.add(name)
        for name, value in metrics.items():
            if name not in written:
                self._maybe_write_metric(name, value, steps_completed)
        self._flush()

    def on_validation_step_end(self, steps_completed: int, metrics: dict[str, Any]) -> None:
        logger.debug("Write validation metrics for TensorBoard")
        self._maybe_reset()
        for name, value in metrics.items():
            self._maybe_write_metric(name if name.startswith("val") else "val_" + name, value, steps_completed)
        self._flush()

    def _flush(self) -> None:
        self.writer.flush()
        self._last_flush_ts = time.time()

    def _maybe_reset(self) -> None:
        """Event files are named by the second they are made: start a new one only once a second has turned."""
        if self._last_flush_ts and int(time.time()) > int(self._last_flush_ts):
            self.writer.reset()
