"""Downsampled metric series for charts: one trial's series, and an experiment's trials on one x grid."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stalwart.api.models.common import FiniteFloat, Id, Response

XAxis = Literal["batches", "epochs", "time"]
MAX_POINTS = 10_000  # per series per request (routes/series.py)


class TrialSeries(Response):
    trial_id: Id
    group: str
    metric: str | None = None
    x_axis: XAxis
    metrics: list[str]
    raw_points: int = Field(ge=0)
    points: int = Field(ge=0, le=4 * MAX_POINTS)
    downsampled: bool
    source: str
    x: list[FiniteFloat]
    y: list[FiniteFloat | None]


class TrialYs(Response):
    trial_id: Id
    raw_points: int = Field(ge=0)
    y: list[FiniteFloat | None] = Field(default_factory=list, description="absent in format=f32 headers")


class ExperimentSeries(Response):
    """format=json; format=f32 answers this header (plus slots, encoding) followed by float32 values."""

    experiment_id: Id
    group: str
    metric: str | None = None
    x_axis: XAxis
    metrics: list[str]
    max_points: int = Field(ge=0)
    source: str
    x: list[FiniteFloat]
    trials: list[TrialYs]
