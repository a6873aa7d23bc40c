"""What keeps a checkpoint that checkpoint GC would delete: something else that still uses it.

Each holder answers, for the checkpoints GC is about to delete, those it must keep and why. Today's holders are the
warm starts and searcher-made trials that start from a checkpoint (`queries.checkpoint_users`): a trial that
started from it, an experiment whose config's `searcher.source_checkpoint_uuid` names it, and an experiment whose
config's `searcher.source_trial_id` names its trial (that trial's latest checkpoint is the one its new trials take).
The model registry's versions hold theirs too (`queries.models_registry.versions_using`, read here without importing
the registry domain): a registered checkpoint is never collected. Both the automatic GC (`checkpoint_gc`) and a
policy changed after the fact (`gc_policy_change`) ask `held`.
"""

from __future__ import annotations

from collections.abc import Callable

from stalwart.master.experiments.gc_selection import Ckpt
from stalwart.master.queries import checkpoint_users, checkpoints as checkpoint_rows, models_registry
from stalwart.master.queries.rows import Conn

Holder = Callable[[Conn, list[Ckpt]], dict[str, str]]
"""(conn, checkpoints GC would delete) -> uuid -> why it must stay, for those the holder keeps."""


def _trials_started_from(conn: Conn, ckpts: list[Ckpt]) -> dict[str, str]:
    rows = checkpoint_users.trials_started_from(conn, [c["uuid"] for c in ckpts])
    return {r["uuid"]: f"trial {r['trial_id']} of experiment {r['experiment_id']} started from it" for r in rows}


def _configs_naming_checkpoints(conn: Conn, ckpts: list[Ckpt]) -> dict[str, str]:
    rows = checkpoint_users.configs_naming_checkpoints(conn, [c["uuid"] for c in ckpts])
    return {r["uuid"]: f"experiment {r['experiment_id']} starts its trials from it (searcher.source_checkpoint_uuid)"
            for r in rows}


def _configs_naming_trials(conn: Conn, ckpts: list[Ckpt]) -> dict[str, str]:
    """The latest completed checkpoint of a trial that another experiment's `searcher.source_trial_id` names."""
    doomed = {c["uuid"] for c in ckpts}
    rows = checkpoint_users.configs_naming_trials(conn, sorted({c["trial_id"] for c in ckpts}))
    held: dict[str, str] = {}
    for r in rows:
        found = checkpoint_rows.latest_completed_of_trial(conn, r["trial_id"])
        if found is not None and found["uuid"] in doomed:
            held[found["uuid"]] = (f"experiment {r['experiment_id']} starts its trials from trial {r['trial_id']}'s "
                                   "latest checkpoint (searcher.source_trial_id)")
    return held


def _model_versions(conn: Conn, ckpts: list[Ckpt]) -> dict[str, str]:
    """A checkpoint registered in the model registry: 'model X version N uses it'."""
    found = models_registry.versions_using(conn, [c["uuid"] for c in ckpts])
    return {uuid: f"{', '.join(used)} uses it" for uuid, used in found.items()}


HOLDERS: tuple[Holder, ...] = (_model_versions, _trials_started_from, _configs_naming_checkpoints,
                               _configs_naming_trials)
"""Every user of a checkpoint that keeps it from GC."""


def held(conn: Conn, ckpts: list[Ckpt]) -> dict[str, str]:
    """uuid -> why it must stay, for each of `ckpts` that something still uses (the first holder's reason)."""
    if not ckpts:
        return {}
    found: dict[str, str] = {}
    for holder in HOLDERS:
        for uuid, reason in holder(conn, ckpts).items():
            found.setdefault(uuid, reason)
    return found
