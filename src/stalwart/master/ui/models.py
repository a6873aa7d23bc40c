"""Page models for the experiments list and the experiment page: filtered, sorted, paged JSON for the UI.

Reads go through `queries.ui_experiments` (the list, an experiment's trials); a trial's best validation comes from
the metrics index when it is built (`series.index`), else its progress from `queries.ui_trials.trial_stats`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from urllib.parse import urlencode

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.common import JsonObject
from stalwart.api.states import ExperimentState
from stalwart.config import secrets
from stalwart.master import views
from stalwart.master.queries import experiments as experiment_queries, ui_experiments, ui_trials
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.scheduling import fit
from stalwart.master.series.index import MetricsIndex
from stalwart.master.service import Master
from stalwart.master.ui import metric_choice, workspace_models

STATES = tuple(s.value for s in ExperimentState)
EXP_SERIES_POINTS = 1000  # slots per trial on the experiment chart (2 per bucket)
TRIAL_SERIES_POINTS = 4000  # points per series on the trial charts (4 per bucket)
EXP_SORTS = (*ui_experiments.LIST_SORTS, "best")
TRIAL_SORTS = ("id", "state", "restarts", "steps_completed", "best_validation", "latest_validation", "progress",
               "duration")
ARCHIVED = {"true": True, "false": False, "all": None}


SortKey = tuple[int, float, str]
"""(kind, number, text): None last, numbers before text."""


def ready_index(idx: MetricsIndex | None) -> MetricsIndex | None:
    """The metrics index when it is built (pages then read it), else None (pages fall back to SQL)."""
    return idx if idx is not None and idx.ready else None


def trial_stats(conn: Conn, built: MetricsIndex | None, trial_id: int, metric: str | None, smaller: bool
                ) -> Mapping[str, object]:
    """A trial's steps completed, best and latest validation of `metric`: from the built metrics index, else
    from the metrics table (`queries.ui_trials.trial_stats`: the best unknown)."""
    if built is not None:
        return built.trial_stats(trial_id, metric, smaller)
    return ui_trials.trial_stats(conn, trial_id, metric)


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


def _check_page(limit: int, offset: int) -> None:
    if not 1 <= limit <= 1000:
        raise InvalidRequest(f"limit: expected 1..1000, got {limit}")
    if offset < 0:
        raise InvalidRequest(f"offset: expected >= 0, got {offset}")


def list_filter(q: str = "", state: str = "", label: str = "", owner: str = "", archived: str = "false",
                project: int | None = None, workspaces: Collection[int] | None = None) -> ui_experiments.ListFilter:
    """The experiments list's filters as the query names them; a clear error names a bad `state` or `archived`."""
    states = [s.strip().upper() for s in state.split(",") if s.strip()] if state else []
    bad = [s for s in states if s not in STATES]
    if bad:
        raise InvalidRequest(f"state: unknown {', '.join(bad)}; use {', '.join(STATES)}")
    if archived not in ARCHIVED:
        raise InvalidRequest(f"archived: expected true, false or all, got {archived!r}")
    return ui_experiments.ListFilter(q=q, states=tuple(states) if state else None, label=label, owner=owner,
                                     archived=ARCHIVED[archived], project=project,
                                     workspaces=None if workspaces is None else tuple(sorted(workspaces)))


def _list_item(row: Row, built: MetricsIndex | None, now: float) -> JsonObject:
    d = views.experiment(row)
    d["num_trials"] = row["num_trials"]
    d["duration_s"] = _duration(row, now)
    d["best"] = built.experiment_best(row["id"], d["metric"], d["smaller_is_better"]) if built else None
    d["project_id"] = row["project_id"]
    return d


def experiments_page(m: Master, idx: MetricsIndex | None, *, q: str = "", state: str = "", label: str = "",
                     owner: str = "", archived: str = "false", sort: str = "id", order: str = "desc", limit: int = 50,
                     offset: int = 0, project: int | None = None, workspaces: Collection[int] | None = None
                     ) -> JsonObject:
    """The experiments list: filtered, sorted and paged, each with its best validation when the index is built
    and its workspace and project; only those of `project` when given, only those in `workspaces` (the ones the
    caller may see) when given."""
    _check_sort(sort, order, EXP_SORTS, "experiments")
    _check_page(limit, offset)
    where = list_filter(q, state, label, owner, archived, project, workspaces)
    now = time.time()
    built = ready_index(idx)
    by_best = sort == "best"  # the index knows the best, not SQL: sort and page them all here
    with m.db.begin() as conn:
        total = ui_experiments.count(conn, where)
        rows = ui_experiments.listed(conn, where, sort=None if by_best else sort, descending=order == "desc",
                                     limit=limit, offset=offset, now=now)
        items = [_list_item(r, built, now) for r in rows]
        if by_best:
            items.sort(key=lambda d: _sort_key(d["best"]["value"] if d["best"] else None), reverse=order == "desc")
            items = items[offset:offset + limit]
        where_is = workspace_models.places(conn, (d["project_id"] for d in items))
    items = [d | where_is.get(d["project_id"], {}) for d in items]
    return {"experiments": items, "total": total, "offset": offset, "limit": limit, "sort": sort, "order": order,
            "filters": {"q": q, "state": state, "label": label, "owner": owner, "archived": archived,
                        **({"project": str(project)} if project is not None else {})},
            "states": list(STATES), "index_ready": built is not None}


def experiment_head(row: views.RowLike, idx: MetricsIndex | None, now: float) -> JsonObject:
    """The experiment as its page's header shows it: its view, duration and best validation."""
    d = views.experiment(row)
    d["duration_s"] = _duration(row, now)
    built = ready_index(idx)
    d["best"] = built.experiment_best(row["id"], d["metric"], d["smaller_is_better"]) if built else None
    return d


def _trial_items(conn: Conn, built: MetricsIndex | None, exp_id: int, head: JsonObject, now: float
                 ) -> list[JsonObject]:
    """An experiment's trials as its page lists them; with their stats when the index is built (else only the
    shown page gets them, from SQL: `_page_stats`)."""
    items: list[JsonObject] = []
    for r in ui_experiments.page_trials(conn, exp_id):
        d = dict(r)
        d["hparams"] = flatten(r["hparams"])
        d["duration_s"] = _duration(r, now)
        if built:
            d.update(trial_stats(conn, built, r["id"], head["metric"], head["smaller_is_better"]))
        items.append(d)
    return items


def _trial_key(sort: str) -> Callable[[JsonObject], SortKey]:
    """How the trials sort by `sort`: a column, a validation's value or a hyperparameter (`hp.<name>`)."""
    if sort.startswith("hp."):
        return lambda d: _sort_key(d["hparams"].get(sort[3:]))
    if sort in ("best_validation", "latest_validation"):
        return lambda d: _sort_key((d.get(sort) or {}).get("value"))
    return lambda d: _sort_key(d.get(sort))


def _searcher(row: Row, head: JsonObject, items: list[JsonObject]) -> JsonObject:
    """The searcher's summary: its name, metric, budget, the experiment's progress and its trials by state."""
    searcher = row["config"].get("searcher", {})
    by_state: dict[str, int] = {}
    for d in items:
        by_state[d["state"]] = by_state.get(d["state"], 0) + 1
    return {"name": searcher.get("name"), "metric": head["metric"], "smaller_is_better": head["smaller_is_better"],
            "max_trials": searcher.get("max_trials"), "max_length": searcher.get("max_length"),
            "progress": row["progress"], "trials_by_state": by_state, "num_trials": len(items)}


def _experiment_model(row: Row, head: JsonObject, items: list[JsonObject], page: list[JsonObject],
                      paging: JsonObject, built: MetricsIndex | None) -> JsonObject:
    """The experiment page's model from its parts: `paging` is its offset, limit, sort and order."""
    metric, ids, cfg = head["metric"], [d["id"] for d in items], row["config"]
    names = built.names(ids) if built else {"validation": [metric] if metric else []}
    default = metric_choice.experiment_default(names, metric)
    return {
        "experiment": head, "config_yaml": secrets.redact_text(row["config_text"], cfg),  # no secret shown
        "searcher": _searcher(row, head, items),
        "trials": page, "trials_total": len(items), **paging,
        "hp_keys": sorted({k for d in items for k in d["hparams"]}),
        "metric_names": names,
        "default_metric": default,  # what the chart shows until a metric is picked
        "epochs_available": bool(cfg.get("records_per_epoch")) and any("global_batch_size" in d["hparams"]
                                                                       for d in items[:1]),
        # The master has no job queue yet: these stay None (shown as "—") until GET /api/v1/jobs exists.
        "job_placeholder": {"queue_position": None, "priority": None},
        "metrics_version": built.version(ids) if built else None,
        "index_ready": built is not None,
        # the chart's first request, also preloaded by the page's HTML
        "series_url": f"/api/v1/experiments/{row['id']}/metrics/series?" + urlencode(
            {"group": default["group"], "x": "batches", "max_points": EXP_SERIES_POINTS, "format": "f32",
             **({"metric": default["metric"]} if default["metric"] else {})}),
    }


def experiment_page(m: Master, idx: MetricsIndex | None, exp_id: int, *, sort: str = "id", order: str = "asc",
                    limit: int = 50, offset: int = 0) -> JsonObject:
    """The experiment page: its header, searcher, a sorted page of its trials and what its chart shows first."""
    _check_sort(sort, order, TRIAL_SORTS, "trials")
    _check_page(limit, offset)
    now = time.time()
    built = ready_index(idx)
    with m.db.begin() as conn:
        row = experiment_queries.get(conn, exp_id)
        head = experiment_head(row, idx, now)
        head.update(workspace_models.places(conn, [row["project_id"]]).get(row["project_id"], {}))
        head["warnings"] = fit.experiment_warnings(conn, row)
        items = _trial_items(conn, built, exp_id, head, now)
        items.sort(key=_trial_key(sort), reverse=order == "desc")
        page = items[offset:offset + limit]
        if not built:
            for d in page:
                d.update(trial_stats(conn, None, d["id"], head["metric"], head["smaller_is_better"]))
    paging: JsonObject = {"offset": offset, "limit": limit, "sort": sort, "order": order}
    return _experiment_model(row, head, items, page, paging, built)
