"""/api/v1/{trials,experiments}/{id}/metrics/series: downsampled metric series for charts (extremes kept).

Thin handlers: the read model (master/series/) downsamples, caches and encodes."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.common import MAX_ID
from stalwart.api.models.series import XAxis
from stalwart.master.routes.common import IdPath, master
from stalwart.master.routes.contract import route
from stalwart.master.series import read
from stalwart.master.series.experiment import ExperimentQuery
from stalwart.master.series.trial import TrialQuery

router = APIRouter(prefix="/api/v1", tags=["metrics"])

MAX_POINTS = 10_000  # per series per request

Group = Annotated[str, Query(min_length=1, max_length=64, description="the metric group (validation, training...)")]
Metric = Annotated[str | None, Query(max_length=256, description="the metric; default: the searcher's, or the first")]
TrialIds = Annotated[str | None, Query(max_length=8000, pattern=r"^[0-9, ]*$",
                                       description="comma-separated trial ids (about 400 at most: URLs stay short)")]
XBound = Annotated[float | None, Query(allow_inf_nan=False, description="the x range to show (default: all of it)")]
MaxPoints = Annotated[int, Query(ge=4, le=MAX_POINTS, description="the most points per series")]


def _check_range(x_min: float | None, x_max: float | None) -> None:
    """An x range the grid can be computed over: its width must be a finite number."""
    if x_min is not None and x_max is not None and not math.isfinite(x_max - x_min):
        raise InvalidRequest(f"x_min..x_max: the range {x_min}..{x_max} is too wide to divide into buckets")


def _trial_ids(text: str | None) -> tuple[int, ...] | None:
    """`trial_ids` (comma-separated ids) as a tuple; None when not given."""
    if not text:
        return None
    try:
        wanted = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise InvalidRequest("trial_ids: expected comma-separated trial ids") from None
    bad = [v for v in wanted if not 0 <= v <= MAX_ID]
    if bad:
        raise InvalidRequest(f"trial_ids: {bad[0]} is not a trial id (0..{MAX_ID})")
    return wanted


@route(router, "GET", "/trials/{trial_id}/metrics/series")
async def trial_series(request: Request, trial_id: IdPath, group: Group = "validation", metric: Metric = None,
                       max_points: MaxPoints = 2000, x: XAxis = "batches", x_min: XBound = None,
                       x_max: XBound = None) -> Response:
    """One series, at most max_points points (M4: first, last, min and max of equal-width x buckets).

    A long series shown whole comes from the metrics index when its leaves are as fine as the buckets
    (then M4 runs over each leaf's min and max point; no row is read), else from the rows."""
    _check_range(x_min, x_max)
    q = TrialQuery(trial_id, group, metric, max_points, x, x_min, x_max)
    body = await read.trial_series(request.app.state, master(request), q)
    return Response(body, media_type="application/json")


@route(router, "GET", "/experiments/{exp_id}/metrics/series")
async def experiment_series(request: Request, exp_id: IdPath, group: Group = "validation", metric: Metric = None,
                            max_points: MaxPoints = 1000, x: XAxis = "batches", x_min: XBound = None,
                            x_max: XBound = None,
                            trial_ids: TrialIds = None,
                            format: Annotated[Literal["json", "f32"], Query()] = "json") -> Response:
    """All trials (or `trial_ids`, comma-separated) on one shared x grid of max_points slots.

    Each trial keeps its min and max point in every bucket, so spikes stay visible. With many trials
    max_points shrinks so that trials x max_points stays under 200,000 values. format=f32 answers the
    same as binary: a little-endian uint32 n, n bytes of JSON (everything but the y values, plus
    `slots`), zero padding to a multiple of 4, then float32 y values trial after trial (NaN = no point).
    """
    _check_range(x_min, x_max)
    q = ExperimentQuery(exp_id, group, metric, max_points, x, x_min, x_max, _trial_ids(trial_ids), format)
    body = await read.experiment_series(request.app.state, master(request), q)
    return Response(body, media_type="application/json" if format == "json" else "application/octet-stream")
