"""Reads and writes of the model registry's tables (models, model_versions), and which versions use a checkpoint.

A model is named by its name, or by its id when the identifier is all digits (a model's name never is). The
experiments domain reads `versions_using` / `versions_of_experiment` here (checkpoint GC's holders, deleting) without
importing the registry domain.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_M = t.models.c
_V = t.model_versions.c
_W = t.workspaces.c
_C = t.checkpoints.c
_T = t.trials.c


def _by_identifier(identifier: str | int) -> sa.ColumnElement[bool]:
    text = str(identifier)
    if text.isascii() and text.isdigit():
        return _M.id == int(text) if len(text) < 12 else sa.false()
    return _M.name == text


def _num_versions() -> sa.ScalarSelect[int]:
    return (sa.select(sa.func.count()).select_from(t.model_versions).where(_V.model_id == _M.id)
            .correlate(t.models).scalar_subquery())


def _models() -> sa.Select[Any]:
    return (sa.select(t.models, _W.name.label("workspace"), _num_versions().label("num_versions"))
            .join(t.workspaces, _W.id == _M.workspace_id))


def model(conn: Conn, identifier: str | int) -> Row | None:
    """The model a path names (by name, or by id when all digits), with its workspace's name and version count."""
    return conn.execute(_models().where(_by_identifier(identifier))).mappings().first()


def model_place(conn: Conn, identifier: str) -> tuple[str, int] | None:
    """(owner, workspace id) of a model, for the permission check."""
    row = conn.execute(sa.select(_M.owner, _M.workspace_id).where(_by_identifier(identifier))).first()
    return (row.owner, int(row.workspace_id)) if row is not None else None


def model_named_like(conn: Conn, name: str) -> Row | None:
    """A model whose name equals `name` case-insensitively (names are unique so on the cluster)."""
    return conn.execute(sa.select(_M.id, _M.name).where(sa.func.lower(_M.name) == name.lower())).mappings().first()


def models(conn: Conn, *, workspace_ids: set[int] | None, archived: bool | None = None, name: str | None = None,
           label: str | None = None) -> list[Row]:
    """Models by id; only those in `workspace_ids` (None: all), of that archived state, whose name contains `name`
    (case-insensitively), carrying `label`."""
    query = _models().order_by(_M.id)
    if workspace_ids is not None:
        query = query.where(_M.workspace_id.in_(sorted(workspace_ids)))
    if archived is not None:
        query = query.where(_M.archived == archived)
    if name:
        query = query.where(sa.func.lower(_M.name).contains(name.lower(), autoescape=True))
    rows = list(conn.execute(query).mappings().all())
    return [r for r in rows if label in (r["labels"] or [])] if label else rows


def model_names_in(conn: Conn, workspace_id: int) -> list[str]:
    """The names of the models in a workspace (a workspace holding any is not deleted)."""
    return list(conn.execute(sa.select(_M.name).where(_M.workspace_id == workspace_id).order_by(_M.id)).scalars())


def insert_model(conn: Conn, **values: Any) -> int:
    key = conn.execute(sa.insert(t.models).values(**values)).inserted_primary_key
    assert key is not None
    return int(key[0])


def update_model(conn: Conn, model_id: int, **values: Any) -> None:
    conn.execute(sa.update(t.models).where(_M.id == model_id).values(**values))


def delete_model(conn: Conn, model_id: int) -> None:
    """The model and all its versions."""
    conn.execute(sa.delete(t.model_versions).where(_V.model_id == model_id))
    conn.execute(sa.delete(t.models).where(_M.id == model_id))


# -- versions ---------------------------------------------------------------------------------------
def _versions() -> sa.Select[Any]:
    return (sa.select(t.model_versions, _M.name.label("model_name"), _T.experiment_id,
                      _C.trial_id.label("trial_id"))
            .join(t.models, _M.id == _V.model_id)
            .join(t.checkpoints, _C.uuid == _V.checkpoint_uuid)
            .outerjoin(t.trials, _T.id == _C.trial_id))


def versions(conn: Conn, model_id: int) -> list[Row]:
    """A model's versions, by number, each with its experiment and trial."""
    return list(conn.execute(_versions().where(_V.model_id == model_id).order_by(_V.version)).mappings().all())


def version(conn: Conn, model_id: int, number: int) -> Row | None:
    return conn.execute(_versions().where(_V.model_id == model_id, _V.version == number)).mappings().first()


def next_version(conn: Conn, model_id: int) -> int:
    """The number the model's next version gets: one past its largest (Determined's rule)."""
    largest = conn.execute(sa.select(sa.func.max(_V.version)).where(_V.model_id == model_id)).scalar()
    return int(largest or 0) + 1


def insert_version(conn: Conn, **values: Any) -> int:
    key = conn.execute(sa.insert(t.model_versions).values(**values)).inserted_primary_key
    assert key is not None
    return int(key[0])


def update_version(conn: Conn, version_id: int, **values: Any) -> None:
    conn.execute(sa.update(t.model_versions).where(_V.id == version_id).values(**values))


def delete_version(conn: Conn, version_id: int) -> None:
    conn.execute(sa.delete(t.model_versions).where(_V.id == version_id))


def checkpoints(conn: Conn, uuids: list[str]) -> dict[str, Row]:
    """The checkpoint rows of `uuids` (those that exist), with their experiment (None for a kept checkpoint whose
    trial is gone)."""
    if not uuids:
        return {}
    query = (sa.select(t.checkpoints, _T.experiment_id).outerjoin(t.trials, _T.id == _C.trial_id)
             .where(_C.uuid.in_(uuids)))
    return {r["uuid"]: r for r in conn.execute(query).mappings().all()}


# -- who uses a checkpoint (read by the experiments domain) ----------------------------------------------
def versions_using(conn: Conn, uuids: list[str]) -> dict[str, list[str]]:
    """uuid -> 'model NAME version N' for each of `uuids` some model version names (in version order)."""
    if not uuids:
        return {}
    query = (sa.select(_V.checkpoint_uuid, _M.name, _V.version).join(t.models, _M.id == _V.model_id)
             .where(_V.checkpoint_uuid.in_(uuids)).order_by(_M.name, _V.version))
    out: dict[str, list[str]] = {}
    for uuid, name, number in conn.execute(query).all():
        out.setdefault(uuid, []).append(f"model {name} version {number}")
    return out


def versions_of_experiment(conn: Conn, exp_id: int) -> list[str]:
    """'model NAME version N (checkpoint UUID)' for every model version whose checkpoint a trial of `exp_id` wrote."""
    query = (sa.select(_M.name, _V.version, _V.checkpoint_uuid).join(t.models, _M.id == _V.model_id)
             .join(t.checkpoints, _C.uuid == _V.checkpoint_uuid).join(t.trials, _T.id == _C.trial_id)
             .where(_T.experiment_id == exp_id).order_by(_M.name, _V.version))
    return [f"model {name} version {number} (checkpoint {uuid})" for name, number, uuid in conn.execute(query).all()]
