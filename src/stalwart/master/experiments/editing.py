"""Editing an experiment's own fields (PATCH): name, description, notes and labels; the stored config follows. Its
log retention (`e set log-retention`), once it has ended."""

from __future__ import annotations

from typing import Any

from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.api.states import ExperimentState as S
from stalwart.master.queries import experiments as experiment_rows, log_policies as policy_rows
from stalwart.master.service import Master

EDITABLE = ("name", "description", "notes", "labels")
IN_CONFIG = ("name", "description", "labels")
"""The fields the experiment config holds too (notes live only on the experiment)."""


def patch_experiment(m: Master, exp_id: int, changes: dict[str, Any]) -> None:
    """Change only the fields in `changes` (already checked against PatchExperiment); `labels` replaces the list.
    A null name or labels is refused: an experiment always has a name, and [] clears the labels."""
    changes = dict(changes)
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: not an editable field; edit one of {', '.join(EDITABLE)}")
    if "name" in changes and changes["name"] is None:
        raise InvalidRequest("name: cannot be null; an experiment always has a name")
    if "labels" in changes and changes["labels"] is None:
        raise InvalidRequest("labels: cannot be null; send [] to remove every label")
    if "labels" in changes:
        changes["labels"] = list(dict.fromkeys(changes["labels"]))  # each label once, in the order given
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        if not changes:
            return
        config = dict(exp["config"])
        for field in IN_CONFIG:
            if field in changes:
                config[field] = changes[field]
        experiment_rows.update_fields(conn, exp_id, {**changes, "config": config})


def set_log_retention(m: Master, exp_id: int, days: int) -> None:
    """The experiment's trials keep their logs `days` days after they end (-1: forever): its config's
    `retention_policy.log_retention_days` and the column the cleanup reads (master/log_retention.py). Refused while
    the experiment runs, as Determined does: trials it makes later would take the old value."""
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        if not S(exp["state"]).terminal:
            raise InvalidStateError(f"experiment {exp_id} is {exp['state']}: its log retention can be set once it "
                                    "has ended; try again later")
        config = dict(exp["config"])
        config["retention_policy"] = {**(config.get("retention_policy") or {}), "log_retention_days": days}
        policy_rows.set_retention(conn, exp_id, days, config)
