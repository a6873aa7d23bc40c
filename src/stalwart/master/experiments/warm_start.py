"""Warm starts (Determined's `searcher.source_trial_id` / `searcher.source_checkpoint_uuid`): every trial of the
experiment starts from a stored checkpoint's weights instead of from scratch.

`source_checkpoint_uuid` names the checkpoint; `source_trial_id` a trial, whose latest COMPLETED checkpoint is
taken when each trial is created. A create whose config names a source that has no completed checkpoint is refused
(400 naming the key, `check`), and so is one whose caller may not view the source's experiment (the create route
checks that). Each new trial records its source in `trials.source_checkpoint_uuid` (as a searcher's
`Create(checkpoint=...)` does), so `trials.latest_checkpoint` hands it to the trial's first run, and deleting the
source's experiment keeps that checkpoint (experiments/deleting.py). `e fork 7 --config searcher.source_trial_id=14`
is the usual way in.
"""

from __future__ import annotations

from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.master.queries import checkpoints as checkpoint_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master


def _named(config: dict[str, Any]) -> tuple[str | None, int | None]:
    searcher = config.get("searcher") or {}
    uuid, trial = searcher.get("source_checkpoint_uuid"), searcher.get("source_trial_id")
    return (str(uuid) if uuid else None), (int(trial) if trial is not None else None)


def source(conn: Conn, config: dict[str, Any]) -> Row | None:
    """The COMPLETED checkpoint a new trial of an experiment with this config starts from; None when the config
    names none (or what it names has no completed checkpoint any more)."""
    uuid, trial_id = _named(config)
    if uuid is not None:
        return checkpoint_rows.completed(conn, uuid)
    if trial_id is not None:
        return checkpoint_rows.latest_completed_of_trial(conn, trial_id)
    return None


def source_uuid(conn: Conn, exp: Row, checkpoint_from: str | None) -> str | None:
    """The warm-start checkpoint of a trial the searcher creates now, unless it starts from a trial of its own
    experiment (`checkpoint_from`: PBT's exploit step)."""
    if checkpoint_from is not None or _named(exp["config"]) == (None, None):
        return None
    found = source(conn, exp["config"])
    return str(found["uuid"]) if found is not None else None


def check(m: Master, config: dict[str, Any]) -> str | None:
    """The uuid of the completed checkpoint a new experiment's warm start names (None: it names none); 400 naming
    the key when there is no such checkpoint. The create route then checks that its caller may view it."""
    uuid, trial_id = _named(config)
    if uuid is None and trial_id is None:
        return None
    with m.db.begin() as conn:
        found = source(conn, config)
    if found is None and uuid is not None:
        raise ConfigError(f"searcher.source_checkpoint_uuid: no completed checkpoint {uuid} to start the trials from; "
                          "`stalwart checkpoint describe UUID` shows a checkpoint's state")
    if found is None:
        raise ConfigError(f"searcher.source_trial_id: trial {trial_id} has no completed checkpoint to start the trials "
                          "from (or there is no such trial); `stalwart t describe ID` lists a trial's checkpoints")
    return str(found["uuid"])
