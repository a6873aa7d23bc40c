"""Who still uses a checkpoint: trials that started from it, experiments whose config starts their trials from it.

A trial starts from another's checkpoint when a searcher asks it to (PBT's exploit step, a custom searcher's
`Create(checkpoint=...)`: `trials.source_checkpoint_uuid`) or when its experiment's config says so
(`searcher.source_checkpoint_uuid`, or `searcher.source_trial_id`: that trial's latest checkpoint). A checkpoint kept
for such a user outlives its own trial: its row then names a trial that no longer exists (`orphans`), whose id is
never handed out again (db/counters.py).
"""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_T = t.trials.c
_E = t.experiments.c
_C = t.checkpoints.c


def _source_uuid() -> sa.ColumnElement[str]:
    """The config's `searcher.source_checkpoint_uuid` (NULL when it names none)."""
    value: sa.ColumnElement[str] = _E.config["searcher"]["source_checkpoint_uuid"].as_string()
    return value


def _source_trial() -> sa.ColumnElement[int]:
    """The config's `searcher.source_trial_id` (NULL when it names none)."""
    value: sa.ColumnElement[int] = _E.config["searcher"]["source_trial_id"].as_integer()
    return value


def trials_started_from(conn: Conn, uuids: list[str], *, outside: int | None = None) -> list[Row]:
    """(uuid, trial_id, experiment_id) of every trial that started from one of `uuids`, except those of
    experiment `outside`."""
    if not uuids:
        return []
    query = (sa.select(_T.source_checkpoint_uuid.label("uuid"), _T.id.label("trial_id"), _T.experiment_id)
             .where(_T.source_checkpoint_uuid.in_(uuids)).order_by(_T.id))
    if outside is not None:
        query = query.where(_T.experiment_id != outside)
    return list(conn.execute(query).mappings().all())


def configs_naming_checkpoints(conn: Conn, uuids: list[str], *, outside: int | None = None) -> list[Row]:
    """(uuid, experiment_id) of every experiment whose config's `searcher.source_checkpoint_uuid` is one of
    `uuids`, except experiment `outside`."""
    if not uuids:
        return []
    query = sa.select(_source_uuid().label("uuid"), _E.id.label("experiment_id")).where(
        _source_uuid().in_(uuids)).order_by(_E.id)
    if outside is not None:
        query = query.where(_E.id != outside)
    return list(conn.execute(query).mappings().all())


def configs_naming_trials(conn: Conn, trial_ids: list[int], *, outside: int | None = None) -> list[Row]:
    """(trial_id, experiment_id) of every experiment whose config's `searcher.source_trial_id` is one of
    `trial_ids`, except experiment `outside`."""
    if not trial_ids:
        return []
    query = sa.select(_source_trial().label("trial_id"), _E.id.label("experiment_id")).where(
        _source_trial().in_(trial_ids)).order_by(_E.id)
    if outside is not None:
        query = query.where(_E.id != outside)
    return list(conn.execute(query).mappings().all())


def orphans(conn: Conn) -> list[Row]:
    """Checkpoints whose trial no longer exists (kept when their experiment was deleted), DELETED ones too."""
    query = (sa.select(t.checkpoints).outerjoin(t.trials, _T.id == _C.trial_id)
             .where(_T.id.is_(None)).order_by(_C.report_time))
    return list(conn.execute(query).mappings().all())


def delete(conn: Conn, uuids: list[str]) -> None:
    """Forget these checkpoints' rows (their files are gone)."""
    if uuids:
        conn.execute(t.checkpoints.delete().where(_C.uuid.in_(uuids)))
