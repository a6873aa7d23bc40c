"""Page models for the trial page (runs, checkpoints, logs) and the cluster page (agents, slots, pools).

Reads go through master/queries/ (`trials`, `experiments`, `runs`, `checkpoints`, `agents`, `ui_trials`,
`ui_cluster`); a trial's stats and metric names come from the metrics index when it is built, else from SQL.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.common import JsonObject
from stalwart.api.states import LOG_LEVELS
from stalwart.master import views
from stalwart.master.provisioning import describe
from stalwart.master.queries import (
    agents as agent_queries,
    checkpoints as checkpoint_queries,
    experiments as experiment_queries,
    runs as run_queries,
    trials as trial_queries,
    ui_cluster,
    ui_trials,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.series.index import MetricsIndex
from stalwart.master.service import Master
from stalwart.master.ui.metric_choice import default_metric
from stalwart.master.ui.models import TRIAL_SERIES_POINTS, flatten, ready_index, trial_stats


def _metric_names(conn: Conn, built: MetricsIndex | None, trial_id: int) -> dict[str, list[str]]:
    """{group: metric names} of a trial: from the built metrics index, else from the metrics table."""
    return built.names([trial_id]) if built else ui_trials.metric_names_by_group(conn, trial_id)


def _checkpoints(conn: Conn, trial_id: int) -> list[JsonObject]:
    rows = checkpoint_queries.of_trial(conn, trial_id)
    vals = ui_trials.validations_at(conn, trial_id, sorted({r["steps_completed"] for r in rows}))
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
        row = trial_queries.get(conn, trial_id)
        exp = experiment_queries.get(conn, row["experiment_id"])
        searcher = exp["config"].get("searcher", {})
        metric, smaller = searcher.get("metric"), searcher.get("smaller_is_better", True)
        runs = run_queries.of_trial(conn, trial_id)
        stats = trial_stats(conn, built, trial_id, metric, smaller)
        names = _metric_names(conn, built, trial_id)
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
    if level and level not in LOG_LEVELS:
        raise InvalidRequest(f"level: expected one of {', '.join(LOG_LEVELS)}, got {level!r}")
    levels = LOG_LEVELS[LOG_LEVELS.index(level):] if level else ()
    with m.db.begin() as conn:
        trial_queries.get(conn, trial_id)
        rows = ui_trials.log_tail(conn, trial_id, levels=levels, text=q, limit=tail + 1)
        last_id = ui_trials.last_log_id(conn, trial_id)
    more = len(rows) > tail
    return {"logs": [dict(r) for r in reversed(rows[:tail])], "last_id": last_id, "truncated": more}


def cluster_page(m: Master) -> JsonObject:
    """The cluster page: every agent with what runs on each of its slots, the pools, and what waits for slots."""
    with m.db.begin() as conn:
        agents = agent_queries.in_id_order(conn)
        live = ui_cluster.live_runs(conn)
    by_agent: dict[str, list[Row]] = {}
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
    page: JsonObject = {"agents": out_agents, "pools": list(pools.values()), "pending_allocations": pending}
    elastic = [p.name for p in m.settings.cluster.pools if p.provider is not None]
    if elastic:
        page["elastic"] = [describe.pool_instances(m, name).model_dump(exclude_unset=True) for name in elastic]
    return page
