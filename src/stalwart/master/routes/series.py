"""/api/v1/{trials,experiments}/{id}/metrics/series: downsampled metric series for charts (extremes kept)."""

from __future__ import annotations

import sqlalchemy as sa
from fastapi import APIRouter, Request

from stalwart.api.errors import InvalidRequest
from stalwart.db import tables as t
from stalwart.master import downsample
from stalwart.master.routes.common import master
from stalwart.master.service import Master

router = APIRouter(prefix="/api/v1", tags=["metrics"])

X_AXES = ("batches", "epochs", "time")
MAX_POINTS = 10_000  # per series per request
TOTAL_VALUES = 200_000  # per multi-trial request: max_points shrinks as trials grow
RAW_LIMIT = 300_000  # a multi-trial request reads raw rows up to this many, else the in-memory summaries


def _index(request: Request):
    idx = getattr(request.app.state, "metrics_index", None)
    if idx is not None and idx.ready:
        idx.refresh()
        return idx
    return None


def _check(x: str, max_points: int) -> None:
    if x not in X_AXES:
        raise InvalidRequest(f"x: expected one of {', '.join(X_AXES)}, got {x!r}")
    if not 4 <= max_points <= MAX_POINTS:
        raise InvalidRequest(f"max_points: expected 4..{MAX_POINTS}, got {max_points}")


def _value(conn, metric: str):
    """SQL for the numeric value of `metric` in the JSON column (None when missing or not a number)."""
    col = t.metrics.c.metrics
    if conn.dialect.name == "postgresql":
        return sa.case((sa.func.jsonb_typeof(col[metric]) == "number", sa.cast(col[metric].astext, sa.Float)))
    if '"' in metric or "\\" in metric:
        return None
    return sa.func.json_extract(col, f'$."{metric}"')


def raw_points(conn, trial_ids: list[int], group: str, metric: str, lo_steps=None, hi_steps=None) -> dict:
    """{trial_id: [(steps, report_time, value)]} sorted by steps, read through the (trial, group, steps) index."""
    m = t.metrics.c
    value = _value(conn, metric)
    cols = [m.trial_id, m.steps_completed, m.report_time, value if value is not None else m.metrics]
    q = sa.select(*cols).where(m.trial_id.in_(trial_ids) if len(trial_ids) > 1 else m.trial_id == trial_ids[0],
                               m.group_name == group)
    if lo_steps is not None:
        q = q.where(m.steps_completed >= lo_steps)
    if hi_steps is not None:
        q = q.where(m.steps_completed <= hi_steps)
    out: dict[int, list] = {tid: [] for tid in trial_ids}
    for tid, steps, rtime, v in conn.execute(q.order_by(m.trial_id, m.steps_completed)):
        if value is None:
            v = v.get(metric) if isinstance(v, dict) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[tid].append((steps, rtime, float(v)))
    return out


def metric_names(conn, trial_id: int, group: str) -> list[str]:
    """Numeric metric names of a group, from its first and last rows (two index lookups)."""
    m = t.metrics.c
    names: set[str] = set()
    for order in (m.steps_completed.asc(), m.steps_completed.desc()):
        row = conn.execute(sa.select(m.metrics).where(m.trial_id == trial_id, m.group_name == group)
                           .order_by(order).limit(1)).scalar()
        if isinstance(row, dict):
            names.update(k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    return sorted(names)


def epoch_factor(exp_config: dict, hparams: dict) -> float:
    """Epochs per batch: global_batch_size / records_per_epoch; refuses x=epochs when either is unknown."""
    rpe = exp_config.get("records_per_epoch") or 0
    gbs = hparams.get("global_batch_size") if isinstance(hparams, dict) else None
    if not isinstance(gbs, (int, float)) or isinstance(gbs, bool) or gbs <= 0 or not rpe:
        raise InvalidRequest("x=epochs needs records_per_epoch in the experiment config and a global_batch_size "
                             "hyperparameter; use x=batches or x=time")
    return float(gbs) / float(rpe)


def _xs(points: list, x: str, factor: float) -> list[float]:
    if x == "time":
        return [p[1] for p in points]
    if x == "epochs":
        return [p[0] * factor for p in points]
    return [float(p[0]) for p in points]


def _steps_range(x: str, factor: float, x_min, x_max) -> tuple:
    if x == "batches":
        return x_min, x_max
    if x == "epochs":
        return (None if x_min is None else x_min / factor), (None if x_max is None else x_max / factor)
    return None, None


@router.get("/trials/{trial_id}/metrics/series")
async def trial_series(request: Request, trial_id: int, group: str = "validation", metric: str | None = None,
                       max_points: int = 2000, x: str = "batches", x_min: float | None = None,
                       x_max: float | None = None) -> dict:
    """One series, at most max_points points (M4: first, last, min and max of equal-width x buckets)."""
    _check(x, max_points)
    m = master(request)
    with m.db.begin() as conn:
        trial = Master.get_row(conn, t.trials, trial_id, "trial")
        names = metric_names(conn, trial_id, group)
        metric = metric or (names[0] if names else None)
        out = {"trial_id": trial_id, "group": group, "metric": metric, "x_axis": x, "metrics": names,
               "raw_points": 0, "points": 0, "downsampled": False, "x": [], "y": []}
        if metric is None:
            return out
        factor = 1.0
        if x == "epochs":
            exp = Master.get_row(conn, t.experiments, trial["experiment_id"], "experiment")
            factor = epoch_factor(exp["config"], trial["hparams"])
        lo_s, hi_s = _steps_range(x, factor, x_min, x_max)
        points = raw_points(conn, [trial_id], group, metric, lo_s, hi_s)[trial_id]
    xs = _xs(points, x, factor)
    ys = [p[2] for p in points]
    if x == "time":
        keep = [i for i in range(len(xs)) if (x_min is None or xs[i] >= x_min) and (x_max is None or xs[i] <= x_max)]
        keep.sort(key=xs.__getitem__)
        xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
    idx = downsample.m4(xs, max(1, max_points // 4), x_min, x_max, ys)
    out.update(raw_points=len(xs), points=len(idx), downsampled=len(idx) < len(xs),
               x=[xs[i] for i in idx], y=[ys[i] for i in idx])
    return out


@router.get("/experiments/{exp_id}/metrics/series")
async def experiment_series(request: Request, exp_id: int, group: str = "validation", metric: str | None = None,
                            max_points: int = 1000, x: str = "batches", x_min: float | None = None,
                            x_max: float | None = None, trial_ids: str | None = None) -> dict:
    """All trials (or `trial_ids`, comma-separated) on one shared x grid of max_points slots.

    Each trial keeps its min and max point in every bucket, so spikes stay visible. With many trials
    max_points shrinks so that trials x max_points stays under 200,000 values.
    """
    _check(x, max_points)
    m = master(request)
    idx = _index(request)
    with m.db.begin() as conn:
        exp = Master.get_row(conn, t.experiments, exp_id, "experiment")
        q = sa.select(t.trials.c.id, t.trials.c.hparams).where(t.trials.c.experiment_id == exp_id)
        if trial_ids:
            try:
                wanted = [int(v) for v in trial_ids.split(",") if v.strip()]
            except ValueError:
                raise InvalidRequest("trial_ids: expected comma-separated trial ids") from None
            q = q.where(t.trials.c.id.in_(wanted))
        trials = conn.execute(q.order_by(t.trials.c.id)).all()
        ids = [tid for tid, _ in trials]
        if metric is None:
            metric = exp["config"]["searcher"].get("metric") if group == "validation" else None
        factors = {tid: epoch_factor(exp["config"], hp) if x == "epochs" else 1.0 for tid, hp in trials}
        per_series = max(4, min(max_points, TOTAL_VALUES // max(1, len(ids))))
        n_raw = sum(s.n for tid in ids if idx and (s := idx.summary(tid, group, metric or "")))
        use_index = idx is not None and n_raw > RAW_LIMIT
        if use_index:
            summaries = {tid: idx.summary(tid, group, metric) for tid in ids}
            series = {tid: [(p[0], p[2], p[1]) for p in s.points()] if s else [] for tid, s in summaries.items()}
            counts = {tid: s.n if s else 0 for tid, s in summaries.items()}
            names = idx.names(ids, group).get(group, [])
        else:
            series = raw_points(conn, ids, group, metric) if (ids and metric) else {tid: [] for tid in ids}
            counts = {tid: len(pts) for tid, pts in series.items()}
            names = idx.names(ids, group).get(group, []) if idx else (metric_names(conn, ids[0], group) if ids else [])
    xs_by = {tid: _xs(pts, x, factors[tid]) for tid, pts in series.items()}
    all_x = [v for xs in xs_by.values() for v in xs]
    lo = x_min if x_min is not None else (min(all_x) if all_x else 0.0)
    hi = x_max if x_max is not None else (max(all_x) if all_x else 1.0)
    grid_x, ys = downsample.grid([list(zip(xs_by[tid], (p[2] for p in series[tid]))) for tid in ids],
                                 max(1, per_series // 2), lo, hi)
    return {
        "experiment_id": exp_id, "group": group, "metric": metric, "x_axis": x, "metrics": names,
        "max_points": per_series, "source": "summary" if use_index else "raw",
        "x": grid_x, "trials": [{"trial_id": tid, "raw_points": counts[tid], "y": y} for tid, y in zip(ids, ys)],
    }
