"""Page models for the trial page (runs, checkpoints, logs) and the cluster page (agents, slots, pools)."""

from __future__ import annotations

import time
from urllib.parse import urlencode

import sqlalchemy as sa

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.common import JsonObject
from stalwart.db import tables as t
from stalwart.master import views
from stalwart.master.queries.metrics import metric_names
from stalwart.master.service import Master
from stalwart.master.ui.metric_choice import default_metric
from stalwart.master.ui.metrics_index import MetricsIndex
from stalwart.master.ui.models import TRIAL_SERIES_POINTS, _trial_stats_sql, flatten, ready_index

LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LIVE = ("PENDING", "ASSIGNED", "RUNNING")


def _groups_sql(conn: sa.Connection, trial_id: int) -> dict[str, list[str]]:
    m = t.metrics.c
    groups = [g for (g,) in conn.execute(sa.select(m.group_name).where(m.trial_id == trial_id).distinct())]
    return {g: metric_names(conn, trial_id, g) for g in sorted(groups)}


def _checkpoints(conn: sa.Connection, trial_id: int) -> list[JsonObject]:
    rows = conn.execute(sa.select(t.checkpoints).where(t.checkpoints.c.trial_id == trial_id)
                        .order_by(t.checkpoints.c.steps_completed)).mappings().all()
    steps = sorted({r["steps_completed"] for r in rows})
    vals: dict[int, JsonObject] = {}  # steps -> the metrics of the validation there
    if steps:
        m = t.metrics.c
        vals = dict(conn.execute(sa.select(m.steps_completed, m.metrics).where(
            m.trial_id == trial_id, m.group_name == "validation", m.steps_completed.in_(steps))).all())
    out: list[JsonObject] = []
    for r in rows:
        d = views.checkpoint(r)
        res = r["resources"] or {}
        d["size_bytes"] = sum(v for v in res.values() if isinstance(v, int)) if isinstance(res, dict) else None
        d["validation_metrics"] = vals.get(r["steps_completed"])
        out.append(d)
    return out


def trial_page(m: Master, idx: MetricsIndex | None, trial_id: int) -> JsonObject:
    """The trial page: the trial, its experiment's searcher metric, runs, checkpoints and its charts' first URLs."""
    built = ready_index(idx)
    with m.db.begin() as conn:
        row = Master.get_row(conn, t.trials, trial_id, "trial")
        exp = Master.get_row(conn, t.experiments, row["experiment_id"], "experiment")
        searcher = exp["config"].get("searcher", {})
        metric, smaller = searcher.get("metric"), searcher.get("smaller_is_better", True)
        runs = conn.execute(sa.select(t.allocations).where(t.allocations.c.trial_id == trial_id)
                            .order_by(t.allocations.c.created_at)).mappings().all()
        stats = built.trial_stats(trial_id, metric, smaller) if built else _trial_stats_sql(conn, trial_id, metric)
        names = built.names([trial_id]) if built else _groups_sql(conn, trial_id)
        checkpoints = _checkpoints(conn, trial_id)
    trial = views.trial(row, dict(stats))
    trial["hparams_flat"] = flatten(row["hparams"])
    now = time.time()
    trial["duration_s"] = max(0.0, (row["ended_at"] or now) - row["created_at"])
    run_list: list[JsonObject] = []
    for i, r in enumerate(runs):
        d = views.allocation(r)
        d["number"] = i + 1
        d["failure"] = r["exit_code"] not in (None, 0) and r["exit_reason"] in (None, "EXITED")
        run_list.append(d)
    urls: dict[str, str | None] = {}
    picks: dict[str, str | None] = {}
    for group in ("training", "validation"):
        pick = picks[group] = default_metric(names.get(group) or [], metric if group == "validation" else None)
        urls[group] = None if pick is None else f"/api/v1/trials/{trial_id}/metrics/series?" + urlencode(
            {"group": group, "x": "batches", "max_points": TRIAL_SERIES_POINTS, "metric": pick})
    return {
        "series_urls": urls,  # the charts' first requests, also preloaded by the page's HTML
        "default_metrics": picks,  # what each chart shows until a metric is picked: never a step counter
        "trial": trial,
        "experiment": {"id": exp["id"], "name": exp["name"], "state": exp["state"], "metric": metric,
                       "smaller_is_better": smaller},
        "runs": run_list,
        "checkpoints": checkpoints,
        "metric_names": names,
        "epochs_available": bool(exp["config"].get("records_per_epoch"))
        and "global_batch_size" in (row["hparams"] or {}),
        "metrics_version": built.version([trial_id]) if built else None,
    }


def trial_logs(m: Master, trial_id: int, *, tail: int = 1000, level: str = "", q: str = "") -> JsonObject:
    """The last `tail` lines (filtered by minimum level and text), and the newest id to follow from."""
    if not 1 <= tail <= 20000:
        raise InvalidRequest(f"tail: expected 1..20000, got {tail}")
    level = level.upper()
    if level and level not in LEVELS:
        raise InvalidRequest(f"level: expected one of {', '.join(LEVELS)}, got {level!r}")
    c = t.task_logs.c
    with m.db.begin() as conn:
        Master.get_row(conn, t.trials, trial_id, "trial")
        where = [c.trial_id == trial_id]
        if level:
            where.append(c.level.in_(LEVELS[LEVELS.index(level):]))
        if q:
            like = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where.append(c.log.ilike(like, escape="\\"))  # case-insensitive on SQLite and PostgreSQL alike
        rows = conn.execute(sa.select(t.task_logs).where(*where).order_by(c.id.desc()).limit(tail + 1)).mappings().all()
        last_id = conn.execute(sa.select(sa.func.max(c.id)).where(c.trial_id == trial_id)).scalar() or 0
    more = len(rows) > tail
    return {"logs": [dict(r) for r in reversed(rows[:tail])], "last_id": last_id, "truncated": more}


def cluster_page(m: Master) -> JsonObject:
    """The cluster page: every agent with what runs on each of its slots, the pools, and what waits for slots."""
    a = t.allocations.c
    with m.db.begin() as conn:
        agents = conn.execute(sa.select(t.agents).order_by(t.agents.c.id)).mappings().all()
        live = conn.execute(
            sa.select(a.id, a.agent_id, a.slot_ids, a.state, a.trial_id, a.started_at,
                      t.trials.c.experiment_id, t.experiments.c.name.label("experiment_name"))
            .select_from(t.allocations.outerjoin(t.trials, t.trials.c.id == a.trial_id)
                         .outerjoin(t.experiments, t.experiments.c.id == t.trials.c.experiment_id))
            .where(a.state.in_(LIVE))).mappings().all()
    by_agent: dict[str, list[sa.RowMapping]] = {}
    pending = 0
    for r in live:
        if r["agent_id"] is None:
            pending += 1
        else:
            by_agent.setdefault(r["agent_id"], []).append(r)
    out_agents: list[JsonObject] = []
    pools: dict[str, JsonObject] = {}
    for ag in agents:
        slots: list[JsonObject] = []
        for i in range(ag["slots"]):
            owner = next((r for r in by_agent.get(ag["id"], []) if i in (r["slot_ids"] or [])), None)
            slots.append({"slot": i, "allocation_id": owner["id"] if owner else None,
                          "state": owner["state"] if owner else None,
                          "trial_id": owner["trial_id"] if owner else None,
                          "experiment_id": owner["experiment_id"] if owner else None,
                          "experiment_name": owner["experiment_name"] if owner else None})
        used = sum(1 for s in slots if s["allocation_id"])
        d = views.agent(ag, used)
        d["slots_detail"] = slots
        out_agents.append(d)
        p = pools.setdefault(ag["resource_pool"], {"name": ag["resource_pool"], "agents": 0, "connected_agents": 0,
                                                    "slots": 0, "used_slots": 0, "slot_types": []})
        p["agents"] += 1
        p["connected_agents"] += int(bool(ag["connected"]))
        p["slots"] += ag["slots"]
        p["used_slots"] += used
        if ag["slot_type"] not in p["slot_types"]:
            p["slot_types"].append(ag["slot_type"])
    return {"agents": out_agents, "pools": list(pools.values()), "pending_allocations": pending}
