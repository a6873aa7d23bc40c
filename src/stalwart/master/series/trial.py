"""One trial's series for its chart: at most max_points points (M4: first, last, min and max of equal-width x
buckets), from the rows, or from the metrics index's leaves for a long series shown whole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stalwart.master.queries import experiments as experiment_rows, trials as trial_rows
from stalwart.master.queries.metrics import metric_names, raw_points
from stalwart.master.series import downsample
from stalwart.master.series.axes import StepsPoint, epoch_factor, steps_range, xs as x_values
from stalwart.master.series.encoding import TrialBody, dumps
from stalwart.master.series.index import MetricsIndex
from stalwart.master.service import Master


@dataclass(frozen=True)
class TrialQuery:
    """What GET /api/v1/trials/{id}/metrics/series asks for (a metric of None: the group's first)."""

    trial_id: int
    group: str
    metric: str | None
    max_points: int
    x: str
    x_min: float | None
    x_max: float | None


def trial_series(m: Master, q: TrialQuery, idx: MetricsIndex | None = None) -> bytes:
    """The trial's series as JSON (api.models.series.TrialSeries); `idx` only when the metrics index is ready.

    A long series shown whole comes from the index when its leaves are as fine as the buckets (then M4 runs
    over each leaf's min and max point; no row is read), else from the rows."""
    x, x_min, x_max = q.x, q.x_min, q.x_max
    with m.db.begin() as conn:
        trial = trial_rows.get(conn, q.trial_id)
        names = metric_names(conn, q.trial_id, q.group)
        metric = q.metric or (names[0] if names else None)
        out: TrialBody = {"trial_id": q.trial_id, "group": q.group, "metric": metric, "x_axis": x,
                          "metrics": names, "raw_points": 0, "points": 0, "downsampled": False, "source": "raw",
                          "x": [], "y": []}
        if metric is None:
            return dumps(out)
        factor = 1.0
        if x == "epochs":
            exp = experiment_rows.get(conn, trial["experiment_id"])
            factor = epoch_factor(exp["config"], trial["hparams"])
        lo_s, hi_s = steps_range(x, factor, x_min, x_max)
        n_buckets = max(1, q.max_points // 4)
        whole = x != "time" and x_min is None and x_max is None
        found = _from_summary(idx, q.trial_id, q.group, metric, n_buckets) if idx is not None and whole else None
        points: Sequence[StepsPoint]
        if found is None:
            points = raw_points(conn, [q.trial_id], q.group, metric, lo_s, hi_s)[q.trial_id]
            raw_count = len(points)
        else:
            points, raw_count = found
            out["source"] = "summary"
    xs = x_values(points, x, factor)
    ys = [p[2] for p in points]
    if x == "time":
        keep = [i for i in range(len(xs)) if (x_min is None or xs[i] >= x_min) and (x_max is None or xs[i] <= x_max)]
        keep.sort(key=xs.__getitem__)
        xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
        raw_count = len(xs)
    keep = downsample.m4(xs, n_buckets, x_min, x_max, ys)
    out["raw_points"], out["points"], out["downsampled"] = raw_count, len(keep), len(keep) < raw_count
    out["x"], out["y"] = [xs[i] for i in keep], [ys[i] for i in keep]
    return dumps(out)


def _from_summary(idx: MetricsIndex, trial_id: int, group: str, metric: str, n_buckets: int
                  ) -> tuple[list[StepsPoint], int] | None:
    """(points, raw count) of a whole series from the metrics index, when its leaves are at least as fine as
    the chart's buckets (every leaf's min and max point, at their own x: extremes stay visible); else None."""
    with idx.reading():
        s = idx.chart_summary(trial_id, group, metric)
        if s is None or s.n <= 4 * n_buckets or s.raw is not None or s.last_x is None or s.first_x is None:
            return None  # short series: reading the rows is cheap and exact
        if s.resolution() > (s.last_x - s.first_x) / n_buckets:
            return None
        return [(x, t, y) for x, y, t in s.points()], s.n
