"""Page models for the experiments list and the experiment page: filtered, sorted, paged JSON for the UI."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from stalwart.api.errors import ConfigError, InvalidRequest
from stalwart.api.models.common import JsonObject
from stalwart.db import tables as t
from stalwart.master import views
from stalwart.master.scheduling import fit
from stalwart.master.service import Master
from stalwart.master.ui import metric_choice, workspace_models
from stalwart.master.ui.metrics_index import MetricsIndex, TrialStats
from stalwart.searcher.space import HParamSpace

E = t.experiments.c
STATES = ("ACTIVE", "PAUSED", "STOPPING_COMPLETED", "STOPPING_CANCELED", "STOPPING_KILLED", "STOPPING_ERROR",
          "COMPLETED", "CANCELED", "ERROR")
EXP_SERIES_POINTS = 1000  # slots per trial on the experiment chart (2 per bucket)
TRIAL_SERIES_POINTS = 4000  # points per series on the trial charts (4 per bucket)
EXP_SORTS = ("id", "name", "state", "progress", "owner", "created_at", "ended_at", "duration", "num_trials", "best")
TRIAL_SORTS = ("id", "state", "restarts", "steps_completed", "best_validation", "latest_validation", "progress",
               "duration")


SortKey = tuple[int, float, str]
"""(kind, number, text): None last, numbers before text."""


def ready_index(idx: MetricsIndex | None) -> MetricsIndex | None:
    """The metrics index when it is built (pages then read it), else None (pages fall back to SQL)."""
    return idx if idx is not None and idx.ready else None


def flatten(hp: object, prefix: str = "") -> JsonObject:
    """Nested hyperparameters as {dotted.key: value}."""
    if not isinstance(hp, dict):
        return {prefix or "value": hp}
    out: JsonObject = {}
    for k, v in hp.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(flatten(v, key) if isinstance(v, dict) else {key: v})
    return out


def _duration(row: views.RowLike, now: float) -> float:
    ended: float = row["ended_at"] or now
    created: float = row["created_at"]
    return max(0.0, ended - created)


def _sort_key(value: object) -> SortKey:
    """Sort None last, numbers before text, without comparing across types."""
    if value is None:
        return (2, 0, "")
    if isinstance(value, bool):
        return (0, int(value), "")
    if isinstance(value, (int, float)):
        return (0, value, "")
    return (1, 0, json.dumps(value) if not isinstance(value, str) else value.lower())


def _check_sort(sort: str, order: str, allowed: Sequence[str], what: str) -> None:
    if sort not in allowed and not (what == "trials" and sort.startswith("hp.")):
        raise InvalidRequest(f"sort: expected one of {', '.join(allowed)}{' or hp.<name>' if what == 'trials' else ''}"
                             f", got {sort!r}")
    if order not in ("asc", "desc"):
        raise InvalidRequest(f"order: expected asc or desc, got {order!r}")


def _page(limit: int, offset: int) -> None:
    if not 1 <= limit <= 1000:
        raise InvalidRequest(f"limit: expected 1..1000, got {limit}")
    if offset < 0:
        raise InvalidRequest(f"offset: expected >= 0, got {offset}")


def _label_filter(conn: sa.Connection, label: str) -> sa.ColumnElement[bool]:
    if conn.dialect.name == "postgresql":
        return sa.type_coerce(E.labels, postgresql.JSONB).contains([label])
    return sa.exists(sa.select(sa.literal(1)).select_from(sa.func.json_each(E.labels).table_valued("value"))
                     .where(sa.column("value") == label))


def experiment_filters(conn: sa.Connection, q: str = "", state: str = "", label: str = "", owner: str = "",
                       archived: str = "false") -> list[sa.ColumnElement[bool]]:
    """The WHERE terms of the experiments list's filters; a clear error names a bad `state` or `archived`."""
    where: list[sa.ColumnElement[bool]] = []
    if q:
        like = "%" + q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        terms: list[sa.ColumnElement[bool]] = [
            sa.func.lower(E.name).like(like, escape="\\"), sa.func.lower(E.description).like(like, escape="\\"),
            sa.func.lower(E.owner).like(like, escape="\\"),
            sa.func.lower(sa.cast(E.labels, sa.Text)).like(like, escape="\\")]
        if q.strip().isdigit():
            terms.append(E.id == int(q.strip()))
        where.append(sa.or_(*terms))
    if state:
        states = [s.strip().upper() for s in state.split(",") if s.strip()]
        bad = [s for s in states if s not in STATES]
        if bad:
            raise InvalidRequest(f"state: unknown {', '.join(bad)}; use {', '.join(STATES)}")
        where.append(E.state.in_(states))
    if label:
        where.append(_label_filter(conn, label))
    if owner:
        where.append(E.owner == owner)
    if archived not in ("true", "false", "all"):
        raise InvalidRequest(f"archived: expected true, false or all, got {archived!r}")
    if archived != "all":
        where.append(E.archived == (archived == "true"))
    return where


def experiments_page(m: Master, idx: MetricsIndex | None, *, q: str = "", state: str = "", label: str = "",
                     owner: str = "", archived: str = "false", sort: str = "id", order: str = "desc", limit: int = 50,
                     offset: int = 0, project: int | None = None, workspaces: Collection[int] | None = None
                     ) -> JsonObject:
    """The experiments list: filtered, sorted and paged, each with its best validation when the index is built
    and its workspace and project; only those of `project` when given, only those in `workspaces` (the ones the
    caller may see) when given."""
    _check_sort(sort, order, EXP_SORTS, "experiments")
    _page(limit, offset)
    now = time.time()
    built = ready_index(idx)
    with m.db.begin() as conn:
        where = experiment_filters(conn, q, state, label, owner, archived)
        if project is not None:
            where.append(E.project_id == project)
        if workspaces is not None:
            where.append(E.project_id.in_(sa.select(t.projects.c.id).where(t.projects.c.workspace_id.in_(
                sorted(workspaces)))))
        total = conn.execute(sa.select(sa.func.count()).select_from(t.experiments).where(*where)).scalar()
        n_trials = (sa.select(sa.func.count()).select_from(t.trials)
                    .where(t.trials.c.experiment_id == E.id).scalar_subquery())
        cols = [E.id, E.name, E.description, E.labels, E.owner, E.state, E.archived, E.progress, E.config,
                E.error_message, E.created_at, E.ended_at, E.project_id, n_trials.label("num_trials")]
        base = sa.select(*cols).where(*where)
        direction = sa.desc if order == "desc" else sa.asc
        if sort == "best":
            rows = conn.execute(base).mappings().all()
        else:
            computed: dict[str, sa.ColumnElement[float]] = {
                "duration": sa.func.coalesce(E.ended_at, now) - E.created_at,
                "num_trials": sa.literal_column("num_trials")}
            key = computed[sort] if sort in computed else E[sort]  # _check_sort let only these through
            rows = conn.execute(base.order_by(direction(key), direction(E.id)).limit(limit).offset(offset)
                                ).mappings().all()
        items: list[JsonObject] = []
        for r in rows:
            d = views.experiment(r)
            d["num_trials"] = r["num_trials"]
            d["duration_s"] = _duration(r, now)
            d["best"] = built.experiment_best(r["id"], d["metric"], d["smaller_is_better"]) if built else None
            d["project_id"] = r["project_id"]
            items.append(d)
        if sort == "best":
            items.sort(key=lambda d: _sort_key(d["best"]["value"] if d["best"] else None), reverse=order == "desc")
            items = items[offset:offset + limit]
        where_is = workspace_models.places(conn, (d["project_id"] for d in items))
    items = [d | where_is.get(d["project_id"], {}) for d in items]
    return {"experiments": items, "total": total, "offset": offset, "limit": limit, "sort": sort, "order": order,
            "filters": {"q": q, "state": state, "label": label, "owner": owner, "archived": archived,
                        **({"project": str(project)} if project is not None else {})},
            "states": list(STATES), "index_ready": built is not None}


def _trial_stats_sql(conn: sa.Connection, trial_id: int, metric: str | None) -> TrialStats:
    """Fallback while the metrics index builds: steps and latest validation by index seeks; best unknown."""
    m = t.metrics.c
    out: TrialStats = {"steps_completed": 0, "best_validation": None, "latest_validation": None, "validations": None}
    for group in ("training", "validation"):
        row = conn.execute(sa.select(m.steps_completed, m.metrics).where(m.trial_id == trial_id, m.group_name == group)
                           .order_by(m.steps_completed.desc()).limit(1)).first()
        if row is None:
            continue
        out["steps_completed"] = max(out["steps_completed"], row[0])
        if group == "validation" and metric and isinstance(row[1], dict) and metric in row[1]:
            out["latest_validation"] = {"value": row[1][metric], "steps_completed": row[0]}
    return out


def experiment_head(row: views.RowLike, idx: MetricsIndex | None, now: float) -> JsonObject:
    """The experiment as its page's header shows it: its view, duration and best validation."""
    d = views.experiment(row)
    d["duration_s"] = _duration(row, now)
    built = ready_index(idx)
    d["best"] = built.experiment_best(row["id"], d["metric"], d["smaller_is_better"]) if built else None
    return d


def experiment_page(m: Master, idx: MetricsIndex | None, exp_id: int, *, sort: str = "id", order: str = "asc",
                    limit: int = 50, offset: int = 0) -> JsonObject:
    """The experiment page: its header, searcher, a sorted page of its trials and what its chart shows first."""
    _check_sort(sort, order, TRIAL_SORTS, "trials")
    _page(limit, offset)
    now = time.time()
    built = ready_index(idx)
    with m.db.begin() as conn:
        row = Master.get_row(conn, t.experiments, exp_id, "experiment")
        head = experiment_head(row, idx, now)
        head.update(workspace_models.places(conn, [row["project_id"]]).get(row["project_id"], {}))
        head["warnings"] = fit.experiment_warnings(conn, row)
        tc = t.trials.c
        trials = conn.execute(
            sa.select(tc.id, tc.state, tc.hparams, tc.restarts, tc.runs, tc.progress, tc.early_exit,
                      tc.created_at, tc.ended_at, tc.error_message)
            .where(tc.experiment_id == exp_id).order_by(tc.id)).mappings().all()
        metric, smaller = head["metric"], head["smaller_is_better"]
        items: list[JsonObject] = []
        for r in trials:
            d = dict(r)
            d["hparams"] = flatten(r["hparams"])
            d["duration_s"] = _duration(r, now)
            if built:
                d.update(built.trial_stats(r["id"], metric, smaller))
            items.append(d)
        key: Callable[[JsonObject], SortKey]
        if sort.startswith("hp."):
            key = lambda d: _sort_key(d["hparams"].get(sort[3:]))  # noqa: E731
        elif sort in ("best_validation", "latest_validation"):
            key = lambda d: _sort_key((d.get(sort) or {}).get("value"))  # noqa: E731
        else:
            key = lambda d: _sort_key(d.get(sort))  # noqa: E731
        items.sort(key=key, reverse=order == "desc")
        page = items[offset:offset + limit]
        if not built:
            for d in page:
                d.update(_trial_stats_sql(conn, d["id"], metric))
    by_state: dict[str, int] = {}
    for d in items:
        by_state[d["state"]] = by_state.get(d["state"], 0) + 1
    hp_keys = sorted({k for d in items for k in d["hparams"]})
    ids = [d["id"] for d in items]
    cfg = row["config"]
    searcher = cfg.get("searcher", {})
    names = built.names(ids) if built else {"validation": [metric] if metric else []}
    default = metric_choice.experiment_default(names, metric)
    return {
        "experiment": head,
        "config_yaml": row["config_text"],
        "searcher": {"name": searcher.get("name"), "metric": metric, "smaller_is_better": smaller,
                     "max_trials": searcher.get("max_trials"), "max_length": searcher.get("max_length"),
                     "progress": row["progress"], "trials_by_state": by_state, "num_trials": len(items)},
        "trials": page, "trials_total": len(items), "offset": offset, "limit": limit, "sort": sort, "order": order,
        "hp_keys": hp_keys,
        "metric_names": names,
        "default_metric": default,  # what the chart shows until a metric is picked
        "epochs_available": bool(cfg.get("records_per_epoch")) and any("global_batch_size" in d["hparams"]
                                                                       for d in items[:1]),
        # The master has no job queue yet: these stay None (shown as "—") until GET /api/v1/jobs exists.
        "job_placeholder": {"queue_position": None, "priority": None},
        "metrics_version": built.version(ids) if built else None,
        "index_ready": built is not None,
        # the chart's first request, also preloaded by the page's HTML
        "series_url": f"/api/v1/experiments/{exp_id}/metrics/series?" + urlencode(
            {"group": default["group"], "x": "batches", "max_points": EXP_SERIES_POINTS, "format": "f32",
             **({"metric": default["metric"]} if default["metric"] else {})}),
    }


def hparam_specs(config_hparams: Mapping[str, Any] | None) -> dict[str, JsonObject]:
    """{dotted name: {kind, ...}} of the config's hyperparameters: the range of int/double/log ones (log: the
    values' bounds and base), the values of categorical ones, the value of constants."""
    try:
        leaves = HParamSpace(config_hparams).leaves
    except ConfigError:
        return {}
    out: dict[str, JsonObject] = {}
    for leaf in leaves:
        spec: JsonObject = {"kind": leaf.kind}
        if leaf.kind in ("int", "double", "log"):
            spec.update(low=leaf.low(), high=leaf.high())
            if leaf.kind == "log":
                spec["base"] = leaf.base
        elif leaf.kind == "categorical":
            spec["vals"] = list(leaf.spec.get("vals") or [])
        else:
            spec["val"] = leaf.spec.get("val")
        out[leaf.name] = spec
    return out


def hparams_view(m: Master, idx: MetricsIndex | None, exp_id: int) -> JsonObject:
    """Every trial's flattened hyperparameters and its best searcher metric, for the hyperparameter charts.

    `hp_keys` are the hyperparameters that vary (an axis each, scaled as the config says: `hp_specs`);
    `constants` those every trial has the same (listed apart: an axis of one value would invent a range)."""
    built = ready_index(idx)
    with m.db.begin() as conn:
        row = Master.get_row(conn, t.experiments, exp_id, "experiment")
        trials = conn.execute(sa.select(t.trials.c.id, t.trials.c.state, t.trials.c.hparams)
                              .where(t.trials.c.experiment_id == exp_id).order_by(t.trials.c.id)).all()
    searcher = row["config"].get("searcher", {})
    metric, smaller = searcher.get("metric"), searcher.get("smaller_is_better", True)
    out: list[JsonObject] = []
    for tid, state, hp in trials:
        best = built.trial_stats(tid, metric, smaller)["best_validation"] if built else None
        out.append({"id": tid, "state": state, "hparams": flatten(hp), "value": best["value"] if best else None})
    specs = hparam_specs(row["config"].get("hyperparameters"))
    constants: JsonObject = {}
    varying: list[str] = []
    for key in sorted({k for d in out for k in d["hparams"]} | set(specs)):
        values = [d["hparams"].get(key) for d in out]
        kind = specs.get(key, {}).get("kind")
        if kind == "const" or (kind is None and len({json.dumps(v, sort_keys=True, default=str) for v in values}) <= 1):
            constants[key] = values[0] if values else specs.get(key, {}).get("val")
        else:
            varying.append(key)
    return {"experiment_id": exp_id, "metric": metric, "smaller_is_better": smaller, "hp_keys": varying,
            "hp_specs": {k: specs[k] for k in varying if k in specs}, "constants": constants,
            "trials": out, "index_ready": built is not None}
