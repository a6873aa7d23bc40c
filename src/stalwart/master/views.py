"""Database rows → the JSON shapes the REST API returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.config import secrets
from stalwart.master.queries import metrics as metric_rows
from stalwart.master.queries.rows import Conn

RowLike = Mapping[Any, Any]
"""A row from master/queries (sa.RowMapping), or a plain dict of the same columns."""
View = dict[str, Any]


def experiment(row: RowLike, trial_counts: dict[int, int] | None = None) -> View:
    cfg = row["config"]
    out: View = {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "notes": row.get("notes"),
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
        "project_id": row.get("project_id"),
    }
    if trial_counts is not None:
        out["num_trials"] = trial_counts.get(row["id"], 0)
    return out


def trial(row: RowLike, extra: dict[str, Any] | None = None) -> View:
    out = {k: row[k] for k in (
        "id", "experiment_id", "request_id", "hparams", "seed", "state", "restarts", "runs", "target_length",
        "progress", "early_exit", "error_message", "created_at", "ended_at",
    )}
    if row.get("log_policy_matched"):
        out["log_policy_matched"] = row["log_policy_matched"]
    out.update(extra or {})
    return out


def allocation(row: RowLike) -> View:
    return {k: row[k] for k in (
        "id", "trial_id", "run_id", "agent_id", "slots", "slot_ids", "state", "pid", "preempt_requested",
        "kill_requested", "exit_code", "exit_reason", "created_at", "started_at", "ended_at", "command_id",
        "backfilled", "pending_reason",
    )}


def checkpoint(row: RowLike) -> View:
    """A checkpoint as the API shows it: its `storage` with the secrets hidden (config/secrets.py)."""
    out = {k: row[k] for k in (
        "uuid", "trial_id", "allocation_id", "steps_completed", "state", "resources", "metadata", "report_time",
    )}
    out["storage"] = secrets.redact_storage(row["storage"])
    return out


def agent(row: RowLike, used_slots: int = 0) -> View:
    out = {k: row[k] for k in ("id", "hostname", "resource_pool", "slots", "slot_type", "enabled", "connected",
                                "registered_at", "last_seen", "draining", "address")}
    out["used_slots"] = used_slots
    return out


def trial_summaries(conn: Conn, trial_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Latest training/validation steps and the latest validation metrics of each trial."""
    if not trial_ids:
        return {}
    out: dict[int, dict[str, Any]] = {tid: {"steps_completed": 0, "latest_validation": None} for tid in trial_ids}
    latest_val: dict[int, int | None] = {}
    for tid, group, steps in metric_rows.latest_steps_by_group(conn, trial_ids):
        out[tid]["steps_completed"] = max(out[tid]["steps_completed"], steps or 0)
        if group == "validation":
            latest_val[tid] = steps
    for tid, val_steps in latest_val.items():
        m = None if val_steps is None else metric_rows.metrics_at(conn, tid, "validation", val_steps)
        out[tid]["latest_validation"] = {"steps_completed": val_steps, "metrics": m}
    return out


def best_validation(conn: Conn, exp_row: RowLike) -> View | None:
    """The experiment's best validation of searcher.metric: {trial_id, steps_completed, value}."""
    searcher = exp_row["config"]["searcher"]
    name, smaller = searcher["metric"], searcher.get("smaller_is_better", True)
    rows = metric_rows.validations_of_experiment(conn, exp_row["id"])
    found = [(r["metrics"][name], r["trial_id"], r["steps_completed"]) for r in rows
             if isinstance(r["metrics"].get(name), (int, float)) and not isinstance(r["metrics"].get(name), bool)]
    if not found:
        return None
    value, trial_id, steps = (min if smaller else max)(found, key=lambda f: f[0])
    return {"trial_id": trial_id, "steps_completed": steps, "value": value, "metric": name}
