"""Checkpoint garbage collection: keep the union of save_trial_latest, save_trial_best, save_experiment_best."""

from __future__ import annotations

import logging
from typing import Any

from stalwart.api.states import ExperimentState as S
from stalwart.config import views
from stalwart.master.queries import (
    checkpoint_users,
    checkpoints as checkpoint_rows,
    experiments as experiment_rows,
    metrics as metric_rows,
    trials as trial_rows,
)
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master
from stalwart.storage import make_storage

log = logging.getLogger(__name__)


Ckpt = dict[str, Any]
"""A checkpoint row as a dict, with "metric": the searcher metric's validation at its step (or None)."""


def _ranked(conn: Conn, exp_config: dict[str, Any], trial_ids: list[int]) -> list[Ckpt]:
    """COMPLETED checkpoints of these trials with the validation metric reported at the same step."""
    metric = views.searcher_metric(exp_config)
    ckpts = [dict(r) for r in checkpoint_rows.completed_of_trials(conn, trial_ids)]
    vals = metric_rows.validations_of_trials(conn, trial_ids)
    by_step = {(v["trial_id"], v["steps_completed"]): v["metrics"].get(metric) for v in vals}
    for c in ckpts:
        c["metric"] = by_step.get((c["trial_id"], c["steps_completed"]))
    return ckpts


def _best(ckpts: list[Ckpt], n: int, smaller: bool) -> set[str]:
    scored = [c for c in ckpts if isinstance(c["metric"], (int, float))]
    scored.sort(key=lambda c: c["metric"] if smaller else -c["metric"])
    return {c["uuid"] for c in scored[:n]}


def _keep_for_trial(ckpts: list[Ckpt], latest_n: int, best_n: int, smaller: bool) -> set[str]:
    latest = sorted(ckpts, key=lambda c: (c["steps_completed"], c["report_time"]), reverse=True)[:latest_n]
    return {c["uuid"] for c in latest} | _best(ckpts, best_n, smaller)


def _delete(conn: Conn, ckpts: list[Ckpt], keep: set[str]) -> None:
    """Delete the files of the checkpoints not in `keep`, nor one a trial started from (a warm start's source)."""
    doomed = [c["uuid"] for c in ckpts if c["uuid"] not in keep]
    keep = keep | {r["uuid"] for r in checkpoint_users.trials_started_from(conn, doomed)}
    for c in ckpts:
        if c["uuid"] in keep:
            continue
        try:
            make_storage(c["storage"]).delete(c["uuid"])
        except Exception as err:  # storage trouble must not break the state machine
            log.warning("could not delete checkpoint %s: %s", c["uuid"], err)
            continue
        checkpoint_rows.mark_deleted(conn, c["uuid"])


def run_for_trial(m: Master, conn: Conn, trial_id: int) -> None:
    """Apply the trial-level policy once a trial has ended (experiment best is applied at the end)."""
    trial = trial_rows.get(conn, trial_id)
    exp = experiment_rows.get(conn, trial["experiment_id"])
    cfg = exp["config"]
    save_exp_best, save_trial_best, save_trial_latest = views.checkpoint_gc_policy(cfg)
    smaller = views.smaller_is_better(cfg)
    ckpts = _ranked(conn, cfg, [trial_id])
    keep = _keep_for_trial(ckpts, save_trial_latest, save_trial_best, smaller)
    if save_exp_best:
        siblings = trial_rows.ids_of_experiment(conn, exp["id"])
        keep |= _best(_ranked(conn, cfg, siblings), save_exp_best, smaller)
    _delete(conn, ckpts, keep)


def run_for_experiment(m: Master, conn: Conn, exp_id: int) -> None:
    """Apply the whole policy (experiment best and each trial's) once an experiment has ended."""
    exp = experiment_rows.get(conn, exp_id)
    if exp["state"] not in (S.COMPLETED.value, S.CANCELED.value, S.ERROR.value):
        return
    cfg = exp["config"]
    save_exp_best, save_trial_best, save_trial_latest = views.checkpoint_gc_policy(cfg)
    smaller = views.smaller_is_better(cfg)
    trial_ids = trial_rows.ids_of_experiment(conn, exp_id)
    all_ckpts = _ranked(conn, cfg, trial_ids)
    keep = _best(all_ckpts, save_exp_best, smaller)
    for tid in trial_ids:
        mine = [c for c in all_ckpts if c["trial_id"] == tid]
        keep |= _keep_for_trial(mine, save_trial_latest, save_trial_best, smaller)
    _delete(conn, all_ckpts, keep)
