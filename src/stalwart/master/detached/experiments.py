"""Detached experiments: made, or found again by their external id, for a script that runs outside the cluster
(Determined's core_v2 "unmanaged" mode). Nothing is scheduled for them: their script starts its own trials' runs."""

from __future__ import annotations

from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import ConfigError, InvalidRequest, InvalidStateError
from stalwart.api.states import ExperimentState as S
from stalwart.config import secrets
from stalwart.config.experiment import UNMANAGED_SEARCHER, load_experiment_config
from stalwart.config.source import read_source
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import detached as detached_rows, experiments as experiment_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, now
from stalwart.master.workspaces import placement


def _checked_config(m: Master, config_text: str) -> dict[str, Any]:
    """The config, validated as any experiment's but without an entrypoint (its script is already running), and
    with core_v2's searcher when it names none."""
    source = read_source(config_text)
    if source.get("searcher") is None:
        source = {**source, "searcher": dict(UNMANAGED_SEARCHER)}
    expanded = load_experiment_config(source, unmanaged=True,
                                      master_defaults={"checkpoint_storage": m.settings.default_checkpoint_storage()})
    config = expanded.config
    if config.get("entrypoint"):
        raise ConfigError("invalid detached experiment config", details=[
            "entrypoint: a detached experiment's script runs outside the cluster: leave entrypoint out (or leave "
            "unmanaged out to have the cluster run it)"])
    return config


def create_or_find(m: Master, ident: Identity, owner: str, config_text: str, external_id: str | None) -> int:
    """The id of the detached experiment `external_id` names (the caller must be able to edit it; a finished one is
    ACTIVE again), else of a new one made from `config_text` in the project it names."""
    if external_id is not None:
        with m.db.begin() as conn:
            found = detached_rows.experiment_by_external_id(conn, external_id)
        if found is not None:
            return _reopened(m, ident, found)
    config = _checked_config(m, config_text)
    with m.db.begin() as conn:
        project = placement.project_for(conn, config)
        authz.require(m, ident, P.CREATE_EXPERIMENTS, placement.target(project))
        exp_id = experiment_rows.insert(
            conn, project_id=project["id"], name=config.get("name") or "", description=config.get("description"),
            labels=list(config.get("labels") or []), owner=owner, config=config,
            config_text=secrets.redact_text(config_text, config), state=S.ACTIVE, created_at=now())
        if not config.get("name"):
            experiment_rows.set_name(conn, exp_id, f"Experiment {exp_id}", {**config, "name": f"Experiment {exp_id}"})
        detached_rows.mark_unmanaged(conn, exp_id, external_id)
    return exp_id


def _reopened(m: Master, ident: Identity, exp: Row) -> int:
    if not exp["unmanaged"]:
        raise InvalidStateError(f"experiment {exp['id']} has external id {exp['external_id']!r} but the cluster runs "
                                "it: give your script another external_experiment_id")
    authz.require(m, ident, P.EDIT_EXPERIMENTS, authz.experiment_targets(m, [dict(exp)])[int(exp["id"])])
    if S(exp["state"]).terminal:
        with m.db.begin() as conn:
            detached_rows.reopen_experiment(conn, exp["id"])
    return int(exp["id"])


def require_detached(conn: Conn, exp_id: int) -> Row:
    """The experiment, which must be a detached one (409 naming what to do otherwise)."""
    exp = experiment_rows.get(conn, exp_id)
    if not exp["unmanaged"]:
        raise InvalidStateError(f"experiment {exp_id} is run by the cluster: only a detached experiment (made by "
                                "core_v2.init outside the cluster) takes trials from a script")
    return exp


def refuse_unmanaged(conn: Conn, exp_id: int, action: str) -> None:
    """409 when `action` (pause, activate) is asked of a detached experiment: the cluster does not run its script."""
    exp = experiment_rows.get(conn, exp_id)
    if exp["unmanaged"]:
        raise InvalidStateError(f"experiment {exp_id} is detached: its script runs outside the cluster, which cannot "
                                f"{action} it (kill or cancel it to end it)")


def check_unmanaged_request(unmanaged: bool, external_id: str | None) -> None:
    """external_experiment_id names a detached experiment only."""
    if external_id is not None and not unmanaged:
        raise InvalidRequest("external_experiment_id: only a detached experiment has one (give unmanaged: true)")
