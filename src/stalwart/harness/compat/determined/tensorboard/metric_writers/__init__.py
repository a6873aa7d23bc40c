"""`determined.tensorboard.metric_writers`: `MetricWriter` (one backend) and `BatchMetricWriter` (the trial's)."""

from __future__ import annotations

from .callback import BatchMetricWriter, MetricWriter

__all__ = ["BatchMetricWriter", "MetricWriter"]
