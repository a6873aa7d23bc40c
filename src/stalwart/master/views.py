"""Database rows → the JSON shapes the REST API returns."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.db import tables as t


def experiment(row, trial_counts: dict | None = None) -> dict:
    cfg = row["config"]
    out = {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "labels": row["labels"],
        "owner": row["owner"],
        "state": row["state"],
        "archived": row["archived"],
        "progress": row["progress"],
        "searcher": cfg["searcher"]["name"],
        "metric": cfg["searcher"].get("metric"),
        "smaller_is_better": cfg["searcher"].get("smaller_is_better", True),
        "error_message": row["error_message"],
        "created_at": row["created_at"],
        "ended_at": row["ended_at"],
    }
    if trial_counts is not None:
        out["num_trials"] = trial_counts.get(row["id"], 0)
    return out


def trial(row, extra: dict | None = None) -> dict:
    out = {k: row[k] for k in (
        "id", "experiment_id", "request_id", "hparams", "seed", "state", "restarts", "runs", "target_length",
        "progress", "early_exit", "error_message", "created_at", "ended_at",
    )}
    out.update(extra or {})
    return out


def allocation(row) -> dict:
    return {k: row[k] for k in (
        "id", "trial_id", "run_id", "agent_id", "slots", "slot_ids", "state", "pid", "preempt_requested", "kill_requested",
        "exit_code", "exit_reason", "created_at", "started_at", "ended_at", "command_id", "backfilled",
        "pending_reason",
    )}


def checkpoint(row) -> dict:
    return {k: row[k] for k in (
        "uuid", "trial_id", "allocation_id", "steps_completed", "state", "resources", "metadata", "storage", "report_time",
    )}


def agent(row, used_slots: int = 0) -> dict:
    out = {k: row[k] for k in ("id", "hostname", "resource_pool", "slots", "slot_type", "enabled", "connected",
                                "registered_at", "last_seen", "draining", "address")}
    out["used_slots"] = used_slots
    return out


def trial_summaries(conn, trial_ids: list[int]) -> dict[int, dict]:
    """Latest training/validation steps and the latest validation metrics of each trial."""
    if not trial_ids:
        return {}
    out: dict[int, dict] = {tid: {"steps_completed": 0, "latest_validation": None} for tid in trial_ids}
    q = (
        sa.select(t.metrics.c.trial_id, t.metrics.c.group_name, sa.func.max(t.metrics.c.steps_completed))
        .where(t.metrics.c.trial_id.in_(trial_ids))
        .group_by(t.metrics.c.trial_id, t.metrics.c.group_name)
    )
    latest_val: dict[int, int] = {}
    for tid, group, steps in conn.execute(q):
        out[tid]["steps_completed"] = max(out[tid]["steps_completed"], steps or 0)
        if group == "validation":
            latest_val[tid] = steps
    for tid, steps in latest_val.items():
        m = conn.execute(
            sa.select(t.metrics.c.metrics).where(
                t.metrics.c.trial_id == tid, t.metrics.c.group_name == "validation", t.metrics.c.steps_completed == steps
            )
        ).scalar()
        out[tid]["latest_validation"] = {"steps_completed": steps, "metrics": m}
    return out


def best_validation(conn, exp_row) -> dict | None:
    """The experiment's best validation of searcher.metric: {trial_id, steps_completed, value}."""
    searcher = exp_row["config"]["searcher"]
    name, smaller = searcher["metric"], searcher.get("smaller_is_better", True)
    rows = conn.execute(
        sa.select(t.metrics.c.trial_id, t.metrics.c.steps_completed, t.metrics.c.metrics)
        .join(t.trials, t.trials.c.id == t.metrics.c.trial_id)
        .where(t.trials.c.experiment_id == exp_row["id"], t.metrics.c.group_name == "validation")
    ).all()
    found = [(r.metrics[name], r.trial_id, r.steps_completed) for r in rows
             if isinstance(r.metrics.get(name), (int, float)) and not isinstance(r.metrics.get(name), bool)]
    if not found:
        return None
    value, trial_id, steps = (min if smaller else max)(found, key=lambda f: f[0])
    return {"trial_id": trial_id, "steps_completed": steps, "value": value, "metric": name}
