"""The web UI's reads of experiments: the experiments list (its search, filters, sorting and paging, each row with
its trials counted), the trials of an experiment's page and the hyperparameters of its charts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_E = t.experiments.c
_T = t.trials.c

LIST_SORTS = ("id", "name", "state", "progress", "owner", "created_at", "ended_at", "duration", "num_trials")
"""What the list sorts by in SQL (a column, `duration` or `num_trials`)."""


@dataclass(frozen=True)
class ListFilter:
    """Which experiments the list shows: `q` in the name, description, owner or labels (or `q` the id), any of
    `states` (when given), those labelled `label`, `owner`'s, archived ones (True), the others (False) or both
    (None), only `project`'s and only those in `workspaces` when given."""

    q: str = ""
    states: tuple[str, ...] | None = None
    label: str = ""
    owner: str = ""
    archived: bool | None = False
    project: int | None = None
    workspaces: tuple[int, ...] | None = None


def _has_label(conn: Conn, label: str) -> sa.ColumnElement[bool]:
    if conn.dialect.name == "postgresql":
        return sa.type_coerce(_E.labels, postgresql.JSONB).contains([label])
    return sa.exists(sa.select(sa.literal(1)).select_from(sa.func.json_each(_E.labels).table_valued("value"))
                     .where(sa.column("value") == label))


def _search(q: str) -> sa.ColumnElement[bool]:
    like = "%" + q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    terms: list[sa.ColumnElement[bool]] = [
        sa.func.lower(_E.name).like(like, escape="\\"), sa.func.lower(_E.description).like(like, escape="\\"),
        sa.func.lower(_E.owner).like(like, escape="\\"),
        sa.func.lower(sa.cast(_E.labels, sa.Text)).like(like, escape="\\")]
    if q.strip().isdigit():
        terms.append(_E.id == int(q.strip()))
    return sa.or_(*terms)


def _conditions(conn: Conn, f: ListFilter) -> list[sa.ColumnElement[bool]]:
    where: list[sa.ColumnElement[bool]] = []
    if f.q:
        where.append(_search(f.q))
    if f.states is not None:
        where.append(_E.state.in_(f.states))
    if f.label:
        where.append(_has_label(conn, f.label))
    if f.owner:
        where.append(_E.owner == f.owner)
    if f.archived is not None:
        where.append(_E.archived == f.archived)
    if f.project is not None:
        where.append(_E.project_id == f.project)
    if f.workspaces is not None:
        where.append(_E.project_id.in_(sa.select(t.projects.c.id).where(t.projects.c.workspace_id.in_(
            sorted(f.workspaces)))))
    return where


def count(conn: Conn, f: ListFilter) -> int:
    """How many experiments `f` lets through."""
    return int(conn.execute(sa.select(sa.func.count()).select_from(t.experiments).where(*_conditions(conn, f)))
               .scalar_one())


def listed(conn: Conn, f: ListFilter, *, sort: str | None, descending: bool, limit: int, offset: int, now: float
           ) -> list[Row]:
    """The experiments `f` lets through, each with `num_trials`: one page sorted by `sort` (one of LIST_SORTS,
    ties by id; `duration` runs to `now` for those not ended), or all of them unsorted when `sort` is None (the
    caller sorts them by what SQL does not know)."""
    n_trials = sa.select(sa.func.count()).select_from(t.trials).where(_T.experiment_id == _E.id).scalar_subquery()
    cols = [_E.id, _E.name, _E.description, _E.labels, _E.owner, _E.state, _E.archived, _E.progress, _E.config,
            _E.error_message, _E.created_at, _E.ended_at, _E.project_id, n_trials.label("num_trials")]
    base = sa.select(*cols).where(*_conditions(conn, f))
    if sort is None:
        return list(conn.execute(base).mappings().all())
    direction = sa.desc if descending else sa.asc
    computed: dict[str, sa.ColumnElement[Any]] = {
        "duration": sa.func.coalesce(_E.ended_at, now) - _E.created_at,
        "num_trials": sa.literal_column("num_trials")}
    key = computed[sort] if sort in computed else _E[sort]
    return list(conn.execute(base.order_by(direction(key), direction(_E.id)).limit(limit).offset(offset))
                .mappings().all())


def page_trials(conn: Conn, exp_id: int) -> list[Row]:
    """An experiment's trials in id order, with the columns its page shows."""
    return list(conn.execute(
        sa.select(_T.id, _T.state, _T.hparams, _T.restarts, _T.runs, _T.progress, _T.early_exit, _T.created_at,
                  _T.ended_at, _T.error_message)
        .where(_T.experiment_id == exp_id).order_by(_T.id)).mappings().all())


def trial_hparams(conn: Conn, exp_id: int) -> list[tuple[int, str, Any]]:
    """(id, state, hyperparameters) of an experiment's trials in id order."""
    rows = conn.execute(sa.select(_T.id, _T.state, _T.hparams).where(_T.experiment_id == exp_id).order_by(_T.id))
    return [(int(tid), str(state), hp) for tid, state, hp in rows]
