"""Checkpoint garbage collection: keep the union of save_trial_latest, save_trial_best, save_experiment_best
(gc_selection decides, checkpoint_holders keeps what something still uses), as trials and experiments end."""

from __future__ import annotations

import logging
from typing import Any

from stalwart.api.states import ExperimentState as S
from stalwart.config import secrets, views
from stalwart.master.experiments import checkpoint_holders
from stalwart.master.experiments.gc_selection import Ckpt, Policy, best, keep_reasons
from stalwart.master.queries import (
    checkpoints as checkpoint_rows,
    experiments as experiment_rows,
    metrics as metric_rows,
    trials as trial_rows,
)
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master
from stalwart.storage import make_storage

log = logging.getLogger(__name__)


def ranked(conn: Conn, exp_config: dict[str, Any], trial_ids: list[int]) -> list[Ckpt]:
    """COMPLETED checkpoints of these trials with the validation metric reported at the same step."""
    metric = views.searcher_metric(exp_config)
    ckpts = [dict(r) for r in checkpoint_rows.completed_of_trials(conn, trial_ids)]
    vals = metric_rows.validations_of_trials(conn, trial_ids)
    by_step = {(v["trial_id"], v["steps_completed"]): v["metrics"].get(metric) for v in vals}
    for c in ckpts:
        c["metric"] = by_step.get((c["trial_id"], c["steps_completed"]))
    return ckpts


def _delete(conn: Conn, ckpts: list[Ckpt], keep: set[str]) -> None:
    """Delete the files of the checkpoints not in `keep`, nor one something still uses (checkpoint_holders)."""
    doomed = [c for c in ckpts if c["uuid"] not in keep]
    keep = keep | set(checkpoint_holders.held(conn, doomed))
    for c in doomed:
        if c["uuid"] in keep:
            continue
        try:
            make_storage(c["storage"]).delete(c["uuid"])
        except Exception as err:  # storage trouble must not break the state machine
            log.warning("could not delete checkpoint %s: %s", c["uuid"],
                        secrets.masked(str(err), secrets.storage_secret_values(c["storage"])))  # no secret in logs
            continue
        checkpoint_rows.mark_deleted(conn, c["uuid"])


def run_for_trial(m: Master, conn: Conn, trial_id: int) -> None:
    """Apply the trial-level policy once a trial has ended (experiment best is applied at the end)."""
    trial = trial_rows.get(conn, trial_id)
    exp = experiment_rows.get(conn, trial["experiment_id"])
    if exp["unmanaged"]:  # a detached script's storage may be its own laptop's disk: the master leaves it alone
        return
    cfg = exp["config"]
    policy = Policy(*views.checkpoint_gc_policy(cfg))
    smaller = views.smaller_is_better(cfg)
    ckpts = ranked(conn, cfg, [trial_id])
    keep = set(keep_reasons(ckpts, policy._replace(save_experiment_best=0), smaller))
    if policy.save_experiment_best:
        siblings = trial_rows.ids_of_experiment(conn, exp["id"])
        keep |= {c["uuid"] for c in best(ranked(conn, cfg, siblings), policy.save_experiment_best, smaller)}
    _delete(conn, ckpts, keep)


def run_for_experiment(m: Master, conn: Conn, exp_id: int) -> None:
    """Apply the whole policy (experiment best and each trial's) once an experiment has ended."""
    exp = experiment_rows.get(conn, exp_id)
    if exp["state"] not in (S.COMPLETED.value, S.CANCELED.value, S.ERROR.value):
        return
    if exp["unmanaged"]:  # a detached script's storage may be its own laptop's disk: the master leaves it alone
        return
    cfg = exp["config"]
    all_ckpts = ranked(conn, cfg, trial_rows.ids_of_experiment(conn, exp_id))
    keep = keep_reasons(all_ckpts, Policy(*views.checkpoint_gc_policy(cfg)), views.smaller_is_better(cfg))
    _delete(conn, all_ckpts, set(keep))
