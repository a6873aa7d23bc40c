"""Changing an experiment's checkpoint GC policy after the fact (Determined's `e set gc-policy`).

`preview` says what a new policy would delete and keep (each kept checkpoint with its reason); `apply` stores the
policy in the experiment's config (its later checkpoints follow it too, as GC runs when trials and the experiment
end) and deletes the existing checkpoints beyond it: their files leave their backend (`make_storage(...).delete`,
any backend), then their rows read DELETED. As in Determined, any experiment may change its policy, running or
ended; a trial that has not ended keeps its latest checkpoint (the one it resumes from) whatever the policy says,
and a checkpoint something else still uses stays (`checkpoint_holders`). A checkpoint whose files could not be
deleted stays COMPLETED and is answered as such: running the change again retries it.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import Any

from stalwart.api.models.experiments import GcCheckpoint, GcPolicyChange
from stalwart.api.states import ExperimentState
from stalwart.config import secrets, views
from stalwart.master.experiments import checkpoint_gc, checkpoint_holders
from stalwart.master.experiments.gc_selection import (
    Ckpt,
    Policy,
    by_trial,
    is_number,
    keep_reasons,
    latest,
    to_delete,
)
from stalwart.master.queries import (
    checkpoints as checkpoint_rows,
    experiments as experiment_rows,
    trials as trial_rows,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master
from stalwart.storage import make_storage

log = logging.getLogger(__name__)


@dataclass
class Plan:
    """What a policy does to an experiment's COMPLETED checkpoints: those it deletes, those it keeps (with why), and
    after `apply`, those whose files could not be deleted."""

    metric: str | None
    smaller_is_better: bool
    delete: list[Ckpt]
    keep: list[tuple[Ckpt, str]]
    failed: list[Ckpt] = field(default_factory=list)


def _resumed_from(conn: Conn, ckpts: list[Ckpt]) -> dict[str, str]:
    """The latest checkpoint of each trial that has not ended: it resumes from it."""
    held: dict[str, str] = {}
    for trial_id, mine in by_trial(ckpts).items():
        if ExperimentState(trial_rows.get(conn, trial_id)["state"]).terminal:
            continue
        for c in latest(mine, 1):
            held[c["uuid"]] = f"trial {trial_id} has not ended: it resumes from its latest checkpoint"
    return held


def plan(conn: Conn, exp: Row, policy: Policy) -> Plan:
    """What `policy` would delete and keep of experiment `exp`'s checkpoints now."""
    cfg = exp["config"]
    smaller = views.smaller_is_better(cfg)
    ckpts = checkpoint_gc.ranked(conn, cfg, trial_rows.ids_of_experiment(conn, exp["id"]))
    keep = keep_reasons(ckpts, policy, smaller)
    for uuid, reason in _resumed_from(conn, ckpts).items():
        keep.setdefault(uuid, reason)
    for uuid, reason in checkpoint_holders.held(conn, to_delete(ckpts, keep)).items():
        keep[uuid] = reason
    kept = sorted((c for c in ckpts if c["uuid"] in keep), key=lambda c: (c["trial_id"], c["steps_completed"]))
    return Plan(metric=views.searcher_metric(cfg), smaller_is_better=smaller, delete=to_delete(ckpts, keep),
                keep=[(c, keep[c["uuid"]]) for c in kept])


def with_policy(config: dict[str, Any], policy: Policy) -> dict[str, Any]:
    """A copy of the config whose `checkpoint_storage` holds the policy's three numbers."""
    out = copy.deepcopy(config)
    storage = dict(out.get("checkpoint_storage") or {})
    storage.update(policy._asdict())
    out["checkpoint_storage"] = storage
    return out


def preview(m: Master, exp_id: int, policy: Policy) -> Plan:
    """The dry run: what `apply` would delete and keep now (nothing changes). 404 for an unknown experiment."""
    with m.db.begin() as conn:
        return plan(conn, experiment_rows.get(conn, exp_id), policy)


def apply(m: Master, exp_id: int, policy: Policy) -> Plan:
    """Store the policy and delete the checkpoints beyond it (files, then rows); the plan it carried out."""
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        done = plan(conn, exp, policy)
        experiment_rows.update_fields(conn, exp_id, {"config": with_policy(exp["config"], policy)})
    for c in done.delete:
        try:
            make_storage(c["storage"]).delete(c["uuid"])
        except Exception as err:  # one backend's trouble must not stop the others' deletions
            log.warning("could not delete checkpoint %s: %s", c["uuid"],
                        secrets.masked(str(err), secrets.storage_secret_values(c["storage"])))  # no secret in logs
            done.failed.append(c)
            continue
        with m.db.begin() as conn:
            checkpoint_rows.mark_deleted(conn, c["uuid"])
    log.info("experiment %d: checkpoint GC policy now %s; deleted %d checkpoint(s), %d could not be deleted",
             exp_id, dict(policy._asdict()), len(done.delete) - len(done.failed), len(done.failed))
    return done


def _shown(c: Ckpt, reason: str = "") -> GcCheckpoint:
    """A checkpoint as answered; its metric only when it is a number (a report may hold any JSON there)."""
    return GcCheckpoint(uuid=c["uuid"], trial_id=c["trial_id"], steps_completed=c["steps_completed"],
                        metric=c["metric"] if is_number(c["metric"]) else None, reason=reason)


def answer(done: Plan, policy: Policy, dry_run: bool) -> GcPolicyChange:
    """The plan as the API answers it."""
    return GcPolicyChange(dry_run=dry_run, metric=done.metric, smaller_is_better=done.smaller_is_better,
                          **policy._asdict(), to_delete=[_shown(c) for c in done.delete],
                          to_keep=[_shown(c, why) for c, why in done.keep],
                          not_deleted=[_shown(c) for c in done.failed])
