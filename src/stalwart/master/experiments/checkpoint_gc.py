"""Checkpoint garbage collection: keep the union of save_trial_latest, save_trial_best, save_experiment_best."""

from __future__ import annotations

import logging

import sqlalchemy as sa

from stalwart.api.states import ExperimentState as S
from stalwart.config import views
from stalwart.db import tables as t
from stalwart.storage import make_storage

log = logging.getLogger(__name__)


def _ranked(conn, exp_config: dict, trial_ids: list[int]) -> list[dict]:
    """COMPLETED checkpoints of these trials with the validation metric reported at the same step."""
    metric = views.searcher_metric(exp_config)
    ckpts = [dict(r) for r in conn.execute(
        sa.select(t.checkpoints).where(t.checkpoints.c.trial_id.in_(trial_ids), t.checkpoints.c.state == "COMPLETED")
    ).mappings()]
    vals = conn.execute(
        sa.select(t.metrics.c.trial_id, t.metrics.c.steps_completed, t.metrics.c.metrics).where(
            t.metrics.c.trial_id.in_(trial_ids), t.metrics.c.group_name == "validation"
        )
    ).all()
    by_step = {(v.trial_id, v.steps_completed): v.metrics.get(metric) for v in vals}
    for c in ckpts:
        c["metric"] = by_step.get((c["trial_id"], c["steps_completed"]))
    return ckpts


def _best(ckpts: list[dict], n: int, smaller: bool) -> set[str]:
    scored = [c for c in ckpts if isinstance(c["metric"], (int, float))]
    scored.sort(key=lambda c: c["metric"] if smaller else -c["metric"])
    return {c["uuid"] for c in scored[:n]}


def _keep_for_trial(ckpts: list[dict], latest_n: int, best_n: int, smaller: bool) -> set[str]:
    latest = sorted(ckpts, key=lambda c: (c["steps_completed"], c["report_time"]), reverse=True)[:latest_n]
    return {c["uuid"] for c in latest} | _best(ckpts, best_n, smaller)


def _delete(conn, ckpts: list[dict], keep: set[str]) -> None:
    for c in ckpts:
        if c["uuid"] in keep:
            continue
        try:
            make_storage(c["storage"]).delete(c["uuid"])
        except Exception as err:  # storage trouble must not break the state machine
            log.warning("could not delete checkpoint %s: %s", c["uuid"], err)
            continue
        conn.execute(t.checkpoints.update().where(t.checkpoints.c.uuid == c["uuid"]).values(state="DELETED"))


def run_for_trial(m, conn, trial_id: int) -> None:
    """Apply the trial-level policy once a trial has ended (experiment best is applied at the end)."""
    trial = conn.execute(sa.select(t.trials).where(t.trials.c.id == trial_id)).mappings().one()
    exp = conn.execute(sa.select(t.experiments).where(t.experiments.c.id == trial["experiment_id"])).mappings().one()
    cfg = exp["config"]
    save_exp_best, save_trial_best, save_trial_latest = views.checkpoint_gc_policy(cfg)
    smaller = views.smaller_is_better(cfg)
    ckpts = _ranked(conn, cfg, [trial_id])
    keep = _keep_for_trial(ckpts, save_trial_latest, save_trial_best, smaller)
    if save_exp_best:
        siblings = list(conn.execute(sa.select(t.trials.c.id).where(t.trials.c.experiment_id == exp["id"])).scalars())
        keep |= _best(_ranked(conn, cfg, siblings), save_exp_best, smaller)
    _delete(conn, ckpts, keep)


def run_for_experiment(m, conn, exp_id: int) -> None:
    exp = conn.execute(sa.select(t.experiments).where(t.experiments.c.id == exp_id)).mappings().one()
    if exp["state"] not in (S.COMPLETED.value, S.CANCELED.value, S.ERROR.value):
        return
    cfg = exp["config"]
    save_exp_best, save_trial_best, save_trial_latest = views.checkpoint_gc_policy(cfg)
    smaller = views.smaller_is_better(cfg)
    trial_ids = list(conn.execute(sa.select(t.trials.c.id).where(t.trials.c.experiment_id == exp_id)).scalars())
    all_ckpts = _ranked(conn, cfg, trial_ids)
    keep = _best(all_ckpts, save_exp_best, smaller)
    for tid in trial_ids:
        mine = [c for c in all_ckpts if c["trial_id"] == tid]
        keep |= _keep_for_trial(mine, save_trial_latest, save_trial_best, smaller)
    _delete(conn, all_ckpts, keep)
