"""An experiment's trials on one shared x grid: in every bucket each trial keeps its min and max point, so
spikes stay visible; read from the rows, or from the metrics index's summaries when the rows are many."""

from __future__ import annotations

from dataclasses import dataclass

from stalwart.api.errors import TryLater
from stalwart.master.queries import experiments as experiment_rows, metrics as metric_rows, trials as trial_rows
from stalwart.master.queries.metrics import metric_names, raw_points
from stalwart.master.queries.rows import Conn
from stalwart.master.series import downsample
from stalwart.master.series.axes import epoch_factor, xs as x_values
from stalwart.master.series.encoding import ExperimentBody, encode
from stalwart.master.series.index import MetricsIndex
from stalwart.master.service import Master

TOTAL_VALUES = 200_000  # per multi-trial request: max_points shrinks as trials grow
RAW_LIMIT = 300_000  # a multi-trial request reads raw rows up to this many, else the in-memory summaries

Grid = tuple[int, int, float, float, float, list[float]]
"""(points per series, buckets, lo, bucket width, hi, x of every slot) of a shared grid."""


class StillIndexing(TryLater):
    """The metrics index is still being built for these trials."""


@dataclass(frozen=True)
class ExperimentQuery:
    """What GET /api/v1/experiments/{id}/metrics/series asks for (trial_ids None: all the experiment's trials;
    a metric of None: the searcher's, for the validation group)."""

    exp_id: int
    group: str
    metric: str | None
    max_points: int
    x: str
    x_min: float | None
    x_max: float | None
    trial_ids: tuple[int, ...] | None
    fmt: str


def experiment_series(m: Master, idx: MetricsIndex | None, q: ExperimentQuery) -> bytes:
    """The trials' series, encoded as `q.fmt` asks; from the summaries when the index is ready and the rows are
    over RAW_LIMIT. While the index is being built, a request over RAW_LIMIT rows is refused (StillIndexing)."""
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, q.exp_id)
        trials = trial_rows.hparams_of_experiment(conn, q.exp_id, None if q.trial_ids is None else list(q.trial_ids))
        ids = [tid for tid, _ in trials]
        metric = q.metric
        if metric is None:
            metric = exp["config"]["searcher"].get("metric") if q.group == "validation" else None
        factors = {tid: epoch_factor(exp["config"], hp) if q.x == "epochs" else 1.0 for tid, hp in trials}
        if idx is not None and idx.ready:
            with idx.reading():
                body = _from_summaries(idx, q, ids, metric, factors, conn)
            return encode(body, q.fmt)
        if idx is not None and _upper_bound_rows(conn, ids, q.group) > RAW_LIMIT:
            raise StillIndexing("the metric summaries are still being built after the master's start; "
                                "this experiment's chart will be ready in a moment")
        names = idx.names(ids, q.group).get(q.group, []) if idx is not None and idx.ready else None
        return encode(_from_rows(conn, q, ids, metric, factors, names), q.fmt)


def _upper_bound_rows(conn: Conn, ids: list[int], group: str) -> int:
    """An upper bound of the rows of these trials in `group` (steps are unique per trial): index seeks only."""
    total = 0
    for tid in ids:
        top = metric_rows.max_steps(conn, tid, group)
        total += 0 if top is None else top + 1
        if total > RAW_LIMIT:
            break
    return total


def _from_summaries(idx: MetricsIndex, q: ExperimentQuery, ids: list[int], metric: str | None,
                    factors: dict[int, float], conn: Conn) -> ExperimentBody:
    """The grid from the index's summaries; from the rows while they are at most RAW_LIMIT."""
    names = idx.names(ids, q.group).get(q.group, [])
    summaries = {tid: idx.summary(tid, q.group, metric or "") for tid in ids}
    if sum(s.n for s in summaries.values() if s) <= RAW_LIMIT:
        return _from_rows(conn, q, ids, metric, factors, names)
    use_time = q.x == "time"
    ranges = [r for tid, s in summaries.items() if s and (r := s.x_range(factors[tid], use_time))]
    per_series, n_buckets, lo, width, hi, grid_x = _grid(len(ids), q, ranges)
    ys = [downsample.place(s.extremes(lo, width, n_buckets, hi, factors[tid], use_time) if s else {},
                           n_buckets, lo, width) for tid, s in summaries.items()]
    counts = [s.n if s else 0 for s in summaries.values()]
    return _body(q, metric, names, per_series, "summary", grid_x, ids, counts, ys)


def _from_rows(conn: Conn, q: ExperimentQuery, ids: list[int], metric: str | None, factors: dict[int, float],
               names: list[str] | None) -> ExperimentBody:
    """The grid from the rows (`names`, the group's metrics, are read from the first trial when None)."""
    rows = raw_points(conn, ids, q.group, metric) if (ids and metric) else {tid: [] for tid in ids}
    if names is None:
        names = metric_names(conn, ids[0], q.group) if ids else []
    points = {tid: list(zip(x_values(pts, q.x, factors[tid]), (p[2] for p in pts), strict=True))
              for tid, pts in rows.items()}
    ranges = [(min(p[0] for p in pts), max(p[0] for p in pts)) for pts in points.values() if pts]
    per_series, n_buckets, lo, width, hi, grid_x = _grid(len(ids), q, ranges)
    ys = [downsample.place(downsample.extremes(points[tid], lo, width, n_buckets, hi), n_buckets, lo, width)
          for tid in ids]
    return _body(q, metric, names, per_series, "raw", grid_x, ids, [len(rows[tid]) for tid in ids], ys)


def _grid(n_trials: int, q: ExperimentQuery, ranges: list[tuple[float, float]]) -> Grid:
    """The shared grid: 2 slots per bucket, max_points shrunk so that trials x points stays under TOTAL_VALUES;
    over x_min..x_max where given, else over the series' x ranges."""
    per_series = max(4, min(q.max_points, TOTAL_VALUES // max(1, n_trials)))
    n_buckets = max(1, per_series // 2)
    lo = q.x_min if q.x_min is not None else (min(r[0] for r in ranges) if ranges else 0.0)
    hi = q.x_max if q.x_max is not None else (max(r[1] for r in ranges) if ranges else 1.0)
    lo2, width, grid_x = downsample.grid_slots(n_buckets, lo, hi)
    return per_series, n_buckets, lo2, width, max(hi, lo2 + width * n_buckets), grid_x


def _body(q: ExperimentQuery, metric: str | None, names: list[str], per_series: int, source: str,
          grid_x: list[float], ids: list[int], counts: list[int], ys: list[list[float | None]]) -> ExperimentBody:
    """The answer, before encoding."""
    return {
        "experiment_id": q.exp_id, "group": q.group, "metric": metric, "x_axis": q.x, "metrics": names,
        "max_points": per_series, "source": source, "x": grid_x,
        "trials": [{"trial_id": tid, "raw_points": n, "y": y} for tid, n, y in zip(ids, counts, ys, strict=True)],
    }
