"""/api/v1/{trials,experiments}/{id}/metrics/series: downsampled metric series for charts (extremes kept)."""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from stalwart.api.errors import InvalidRequest, TryLater
from stalwart.api.models.common import MAX_ID
from stalwart.api.models.series import XAxis
from stalwart.master import downsample
from stalwart.master.queries import experiments as experiment_rows, metrics as metric_rows, trials as trial_rows
from stalwart.master.queries.metrics import Point, metric_names, raw_points
from stalwart.master.queries.rows import Conn
from stalwart.master.routes.common import IdPath, master
from stalwart.master.routes.contract import route
from stalwart.master.service import Master

router = APIRouter(prefix="/api/v1", tags=["metrics"])

MAX_POINTS = 10_000  # per series per request
TOTAL_VALUES = 200_000  # per multi-trial request: max_points shrinks as trials grow
RAW_LIMIT = 300_000  # a multi-trial request reads raw rows up to this many, else the in-memory summaries


Group = Annotated[str, Query(min_length=1, max_length=64, description="the metric group (validation, training...)")]
Metric = Annotated[str | None, Query(max_length=256, description="the metric; default: the searcher's, or the first")]
TrialIds = Annotated[str | None, Query(max_length=8000, pattern=r"^[0-9, ]*$",
                                       description="comma-separated trial ids (about 400 at most: URLs stay short)")]
XBound = Annotated[float | None, Query(allow_inf_nan=False, description="the x range to show (default: all of it)")]
MaxPoints = Annotated[int, Query(ge=4, le=MAX_POINTS, description="the most points per series")]

Index = Any
"""The UI's metrics index (ui/metrics_index.MetricsIndex) when the app has one, else None."""
Key = tuple[Any, ...]
Body = dict[str, Any]


def _check_range(x_min: float | None, x_max: float | None) -> None:
    """An x range the grid can be computed over: its width must be a finite number."""
    if x_min is not None and x_max is not None and not math.isfinite(x_max - x_min):
        raise InvalidRequest(f"x_min..x_max: the range {x_min}..{x_max} is too wide to divide into buckets")


def _trial_ids(text: str | None) -> list[int] | None:
    """`trial_ids` (comma-separated ids) as a list; None when not given."""
    if not text:
        return None
    try:
        wanted = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InvalidRequest("trial_ids: expected comma-separated trial ids") from None
    bad = [v for v in wanted if not 0 <= v <= MAX_ID]
    if bad:
        raise InvalidRequest(f"trial_ids: {bad[0]} is not a trial id (0..{MAX_ID})")
    return wanted


def epoch_factor(exp_config: dict[str, Any], hparams: Any) -> float:
    """Epochs per batch: global_batch_size / records_per_epoch; refuses x=epochs when either is unknown."""
    rpe = exp_config.get("records_per_epoch") or 0
    gbs = hparams.get("global_batch_size") if isinstance(hparams, dict) else None
    if not isinstance(gbs, (int, float)) or isinstance(gbs, bool) or gbs <= 0 or not rpe:
        raise InvalidRequest("x=epochs needs records_per_epoch in the experiment config and a global_batch_size "
                             "hyperparameter; use x=batches or x=time")
    return float(gbs) / float(rpe)


def _xs(points: Sequence[Point], x: str, factor: float) -> list[float]:
    if x == "time":
        return [p[1] for p in points]
    if x == "epochs":
        return [p[0] * factor for p in points]
    return [float(p[0]) for p in points]


def _steps_range(x: str, factor: float, x_min: float | None, x_max: float | None
                 ) -> tuple[float | None, float | None]:
    if x == "batches":
        return x_min, x_max
    if x == "epochs":
        return (None if x_min is None else x_min / factor), (None if x_max is None else x_max / factor)
    return None, None


class ResponseCache:
    """Encoded series by (request, data version): a page opened again, or by a second user, costs nothing.

    The version is the metrics index's row count of the trials involved, so any new or re-read point
    changes the key; without a ready index nothing is cached. Bounded by total bytes (LRU).
    """

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self.items: OrderedDict[Key, bytes] = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()
        self.enabled = os.environ.get("STALWART_UI_SERIES_CACHE", "1") != "0"

    def get(self, key: Key | None) -> bytes | None:
        if key is None or not self.enabled:
            return None
        with self.lock:
            body = self.items.get(key)
            if body is not None:
                self.items.move_to_end(key)
            return body

    def put(self, key: Key | None, body: bytes) -> bytes:
        if key is None or not self.enabled or len(body) > self.max_bytes // 4:
            return body
        with self.lock:
            if key not in self.items:
                self.items[key] = body
                self.size += len(body)
            while self.size > self.max_bytes:
                self.size -= len(self.items.popitem(last=False)[1])
        return body


def _cache(request: Request) -> ResponseCache:
    cache = getattr(request.app.state, "series_cache", None)
    if cache is None:
        cache = request.app.state.series_cache = ResponseCache()
    return cache


def _version(request: Request, trial_ids: list[int] | None, exp_id: int | None = None) -> Any:
    idx = getattr(request.app.state, "metrics_index", None)
    if idx is None or not idx.ready:
        return None
    return idx.version(trial_ids if trial_ids is not None else idx.trial_ids(exp_id))


class StillIndexing(TryLater):
    """The metrics index is still being built for these trials."""


@route(router, "GET", "/trials/{trial_id}/metrics/series")
async def trial_series(request: Request, trial_id: IdPath, group: Group = "validation", metric: Metric = None,
                       max_points: MaxPoints = 2000, x: XAxis = "batches", x_min: XBound = None,
                       x_max: XBound = None) -> Response:
    """One series, at most max_points points (M4: first, last, min and max of equal-width x buckets).

    A long series shown whole comes from the metrics index when its leaves are as fine as the buckets
    (then M4 runs over each leaf's min and max point; no row is read), else from the rows."""
    _check_range(x_min, x_max)
    idx = getattr(request.app.state, "metrics_index", None)
    if idx is not None:
        idx.refresh()
    version = _version(request, [trial_id])
    key = None if version is None else ("trial", trial_id, group, metric, max_points, x, x_min, x_max, version)
    cache = _cache(request)
    body = cache.get(key) or cache.put(key, await run_in_threadpool(
        _trial_series, master(request), trial_id, group, metric, max_points, x, x_min, x_max,
        idx if idx is not None and idx.ready else None))
    return Response(body, media_type="application/json")


def _from_summary(idx: Index, trial_id: int, group: str, metric: str, n_buckets: int
                  ) -> tuple[list[Point], int] | None:
    """(points, raw count) of a whole series from the metrics index, when its leaves are at least as fine as
    the chart's buckets (every leaf's min and max point, at their own x: extremes stay visible); else None."""
    with idx.reading():
        s = idx.chart_summary(trial_id, group, metric)
        if s is None or s.n <= 4 * n_buckets or s.raw is not None:
            return None  # short series: reading the rows is cheap and exact
        if s.resolution() > (s.last_x - s.first_x) / n_buckets:
            return None
        return [(x, t, y) for x, y, t in s.points()], s.n


def _trial_series(m: Master, trial_id: int, group: str, metric: str | None, max_points: int, x: str,
                  x_min: float | None, x_max: float | None, idx: Index = None) -> bytes:
    with m.db.begin() as conn:
        trial = trial_rows.get(conn, trial_id)
        names = metric_names(conn, trial_id, group)
        metric = metric or (names[0] if names else None)
        out: Body = {"trial_id": trial_id, "group": group, "metric": metric, "x_axis": x, "metrics": names,
               "raw_points": 0, "points": 0, "downsampled": False, "source": "raw", "x": [], "y": []}
        if metric is None:
            return _dumps(out)
        factor = 1.0
        if x == "epochs":
            exp = experiment_rows.get(conn, trial["experiment_id"])
            factor = epoch_factor(exp["config"], trial["hparams"])
        lo_s, hi_s = _steps_range(x, factor, x_min, x_max)
        n_buckets = max(1, max_points // 4)
        whole = x != "time" and x_min is None and x_max is None
        found = _from_summary(idx, trial_id, group, metric, n_buckets) if idx is not None and whole else None
        if found is None:
            points = raw_points(conn, [trial_id], group, metric, lo_s, hi_s)[trial_id]
            raw_count = len(points)
        else:
            points, raw_count = found
            out["source"] = "summary"
    xs = _xs(points, x, factor)
    ys = [p[2] for p in points]
    if x == "time":
        keep = [i for i in range(len(xs)) if (x_min is None or xs[i] >= x_min) and (x_max is None or xs[i] <= x_max)]
        keep.sort(key=xs.__getitem__)
        xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
        raw_count = len(xs)
    keep = downsample.m4(xs, n_buckets, x_min, x_max, ys)
    out.update(raw_points=raw_count, points=len(keep), downsampled=len(keep) < raw_count,
               x=[xs[i] for i in keep], y=[ys[i] for i in keep])
    return _dumps(out)


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
    wanted = _trial_ids(trial_ids)
    idx: Index = getattr(request.app.state, "metrics_index", None)
    if idx is not None:
        idx.refresh()
    version = _version(request, wanted, exp_id)
    key = None if version is None else ("experiment", exp_id, group, metric, max_points, x, x_min, x_max,
                                        tuple(wanted or ()), version, len(idx.trial_ids(exp_id)), format)
    cache = _cache(request)
    body = cache.get(key) or cache.put(key, await run_in_threadpool(
        _experiment_series, master(request), idx, exp_id, group, metric, max_points, x, x_min, x_max, wanted, format))
    return Response(body, media_type="application/json" if format == "json" else "application/octet-stream")


def _experiment_series(m: Master, idx: Index, exp_id: int, group: str, metric: str | None, max_points: int, x: str,
                       x_min: float | None, x_max: float | None, wanted: list[int] | None, fmt: str = "json") -> bytes:
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        trials = trial_rows.hparams_of_experiment(conn, exp_id, wanted)
        ids = [tid for tid, _ in trials]
        if metric is None:
            metric = exp["config"]["searcher"].get("metric") if group == "validation" else None
        factors = {tid: epoch_factor(exp["config"], hp) if x == "epochs" else 1.0 for tid, hp in trials}
        if idx is not None and idx.ready:
            with idx.reading():
                body = _from_summaries(idx, exp_id, ids, group, metric, max_points, x, x_min, x_max, factors, conn)
            return _encode(body, fmt)
        if idx is not None and _upper_bound_rows(conn, ids, group) > RAW_LIMIT:
            raise StillIndexing("the metric summaries are still being built after the master's start; "
                                "this experiment's chart will be ready in a moment")
        return _encode(_from_rows(conn, exp_id, ids, group, metric, max_points, x, x_min, x_max, factors,
                                  idx.names(ids, group).get(group, []) if idx and idx.ready else None), fmt)


def _upper_bound_rows(conn: Conn, ids: list[int], group: str) -> int:
    """An upper bound of the rows of these trials in `group` (steps are unique per trial): index seeks only."""
    total = 0
    for tid in ids:
        top = metric_rows.max_steps(conn, tid, group)
        total += 0 if top is None else top + 1
        if total > RAW_LIMIT:
            break
    return total


def _from_summaries(idx: Index, exp_id: int, ids: list[int], group: str, metric: str | None, max_points: int, x: str,
                    x_min: float | None, x_max: float | None, factors: dict[int, float], conn: Conn) -> Body:
    summaries = {tid: idx.summary(tid, group, metric or "") for tid in ids}
    if sum(s.n for s in summaries.values() if s) <= RAW_LIMIT:
        return _from_rows(conn, exp_id, ids, group, metric, max_points, x, x_min, x_max, factors,
                          idx.names(ids, group).get(group, []))
    use_time = x == "time"
    ranges = [r for tid, s in summaries.items() if s and (r := s.x_range(factors[tid], use_time))]
    per_series, n_buckets, lo, width, hi, grid_x = _grid(len(ids), max_points, ranges, x_min, x_max)
    ys = [downsample.place(s.extremes(lo, width, n_buckets, hi, factors[tid], use_time) if s else {},
                           n_buckets, lo, width) for tid, s in summaries.items()]
    counts = [s.n if s else 0 for s in summaries.values()]
    return _experiment_body(exp_id, group, metric, x, idx.names(ids, group).get(group, []), per_series, "summary",
                            grid_x, ids, counts, ys)


def _from_rows(conn: Conn, exp_id: int, ids: list[int], group: str, metric: str | None, max_points: int, x: str,
               x_min: float | None, x_max: float | None, factors: dict[int, float], names: list[str] | None) -> Body:
    rows = raw_points(conn, ids, group, metric) if (ids and metric) else {tid: [] for tid in ids}
    if names is None:
        names = metric_names(conn, ids[0], group) if ids else []
    points = {tid: list(zip(_xs(pts, x, factors[tid]), (p[2] for p in pts), strict=True)) for tid, pts in rows.items()}
    ranges = [(min(p[0] for p in pts), max(p[0] for p in pts)) for pts in points.values() if pts]
    per_series, n_buckets, lo, width, hi, grid_x = _grid(len(ids), max_points, ranges, x_min, x_max)
    ys = [downsample.place(downsample.extremes(points[tid], lo, width, n_buckets, hi), n_buckets, lo, width)
          for tid in ids]
    return _experiment_body(exp_id, group, metric, x, names, per_series, "raw", grid_x, ids,
                            [len(rows[tid]) for tid in ids], ys)


def _grid(n_trials: int, max_points: int, ranges: list[tuple[float, float]], x_min: float | None, x_max: float | None
          ) -> tuple[int, int, float, float, float, list[float]]:
    per_series = max(4, min(max_points, TOTAL_VALUES // max(1, n_trials)))
    n_buckets = max(1, per_series // 2)
    lo = x_min if x_min is not None else (min(r[0] for r in ranges) if ranges else 0.0)
    hi = x_max if x_max is not None else (max(r[1] for r in ranges) if ranges else 1.0)
    lo2, width, grid_x = downsample.grid_slots(n_buckets, lo, hi)
    return per_series, n_buckets, lo2, width, max(hi, lo2 + width * n_buckets), grid_x


def _rounded(ys: list[float | None]) -> list[float | None]:
    """y values to 6 significant digits of the series' largest magnitude: a third of the JSON, same pixels."""
    top = max((abs(v) for v in ys if v is not None), default=0.0)
    if top == 0.0:
        return ys
    digits = 6 - int(math.floor(math.log10(top)))
    return [None if v is None else round(v, digits) for v in ys]


def _experiment_body(exp_id: int, group: str, metric: str | None, x: str, names: list[str], per_series: int,
                     source: str, grid_x: list[float], ids: list[int], counts: list[int],
                     ys: list[list[float | None]]) -> Body:
    return {
        "experiment_id": exp_id, "group": group, "metric": metric, "x_axis": x, "metrics": names,
        "max_points": per_series, "source": source, "x": grid_x,
        "trials": [{"trial_id": tid, "raw_points": n, "y": y} for tid, n, y in zip(ids, counts, ys, strict=True)],
    }


def _encode(body: Body, fmt: str) -> bytes:
    if fmt == "json":
        for tr in body["trials"]:
            tr["y"] = _rounded(tr["y"])
        return _dumps(body)
    nan = float("nan")
    values = array("f", [nan if v is None else v for tr in body["trials"] for v in tr.pop("y")])
    if sys.byteorder == "big":
        values.byteswap()
    head = json.dumps({**body, "slots": len(body["x"]), "encoding": "f32"}, separators=(",", ":")).encode()
    pad = b"\0" * (-len(head) % 4)
    return len(head).to_bytes(4, "little") + head + pad + values.tobytes()


def _dumps(data: Body) -> bytes:
    """Long number lists straight to JSON (FastAPI's encoder would walk every element)."""
    return json.dumps(data, separators=(",", ":")).encode()
