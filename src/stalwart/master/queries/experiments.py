"""Reads and writes of the experiments table and the rows hanging off one experiment (contexts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from stalwart.api.states import ExperimentState as S
from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row, one_or_404


def get(conn: Conn, exp_id: int) -> Row:
    """One experiment; 404 when there is none."""
    return one_or_404(conn, t.experiments, exp_id, "experiment")


SORT_COLUMNS: dict[str, sa.ColumnElement[Any]] = {
    "id": t.experiments.c.id,
    "name": t.experiments.c.name,
    "state": t.experiments.c.state,
    "start_time": t.experiments.c.created_at,
    "end_time": t.experiments.c.ended_at,
    "progress": t.experiments.c.progress,
}
"""What GET /api/v1/experiments may sort by, and the column each name stands for."""


@dataclass(frozen=True)
class ExperimentFilter:
    """Which experiments a list shows: any of `states`, all of `labels`, `name` as a case-insensitive substring,
    archived ones only with `include_archived`, only `owner`'s when given."""

    states: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    name: str | None = None
    include_archived: bool = False
    owner: str | None = None
    project_ids: tuple[int, ...] | None = None  # only these projects' (None: every project's)


def _has_label(conn: Conn, label: str) -> sa.ColumnElement[bool]:
    labels = t.experiments.c.labels
    if conn.dialect.name == "postgresql":
        return sa.cast(labels, postgresql.JSONB).contains(sa.cast(sa.literal([label], sa.JSON), postgresql.JSONB))
    element = sa.func.json_each(labels).table_valued("value")
    return sa.exists(sa.select(sa.literal(1)).select_from(element).where(element.c.value == label))


def _conditions(conn: Conn, f: ExperimentFilter) -> list[sa.ColumnElement[bool]]:
    c = t.experiments.c
    where: list[sa.ColumnElement[bool]] = []
    if f.states:
        where.append(c.state.in_(f.states))
    where.extend(_has_label(conn, label) for label in f.labels)
    if f.name:
        where.append(c.name.icontains(f.name, autoescape=True))
    if not f.include_archived:
        where.append(c.archived.is_(False))
    if f.owner is not None:
        where.append(c.owner == f.owner)
    if f.project_ids is not None:
        where.append(c.project_id.in_(f.project_ids))
    return where


def page(conn: Conn, *, limit: int, offset: int, where: ExperimentFilter | None = None, sort_by: str = "id",
         descending: bool = True) -> tuple[list[Row], int]:
    """One page of the experiments matching `where` (all of them by default), sorted by `sort_by` (a key of
    SORT_COLUMNS; ties by id), and how many match in all."""
    conditions = _conditions(conn, where) if where is not None else []
    column = SORT_COLUMNS[sort_by]
    order = [column.desc().nulls_last(), t.experiments.c.id.desc()] if descending else \
        [column.asc().nulls_last(), t.experiments.c.id.asc()]
    if sort_by == "id":
        order = order[:1]
    rows = conn.execute(
        sa.select(t.experiments).where(*conditions).order_by(*order).limit(limit).offset(offset)
    ).mappings().all()
    total = conn.execute(sa.select(sa.func.count()).select_from(t.experiments).where(*conditions)).scalar_one()
    return list(rows), int(total)


def update_fields(conn: Conn, exp_id: int, values: dict[str, Any]) -> None:
    """Change some of name, description, notes, labels and config (the columns named in `values`)."""
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(**values))


def delete_rows(conn: Conn, exp_id: int, keep_checkpoints: frozenset[str] = frozenset()) -> None:
    """Delete the experiment and every row hanging off it: its trials' logs, metrics, checkpoints (but those of
    `keep_checkpoints`, which something else still uses), allocations (and their containers), the trials, its
    context, its job, and the experiment itself."""
    trial_ids = sa.select(t.trials.c.id).where(t.trials.c.experiment_id == exp_id).scalar_subquery()
    alloc_ids = sa.select(t.allocations.c.id).where(t.allocations.c.trial_id.in_(trial_ids)).scalar_subquery()
    conn.execute(t.task_logs.delete().where(t.task_logs.c.trial_id.in_(trial_ids)))
    conn.execute(t.log_policy_matches.delete().where(t.log_policy_matches.c.trial_id.in_(trial_ids)))
    conn.execute(t.metrics.delete().where(t.metrics.c.trial_id.in_(trial_ids)))
    conn.execute(t.checkpoints.delete().where(t.checkpoints.c.trial_id.in_(trial_ids),
                                              t.checkpoints.c.uuid.not_in(keep_checkpoints)))
    conn.execute(t.allocation_containers.delete().where(t.allocation_containers.c.allocation_id.in_(alloc_ids)))
    conn.execute(t.allocations.delete().where(t.allocations.c.trial_id.in_(trial_ids)))
    conn.execute(t.trials.delete().where(t.trials.c.experiment_id == exp_id))
    conn.execute(t.contexts.delete().where(t.contexts.c.experiment_id == exp_id))
    conn.execute(t.jobs.delete().where(t.jobs.c.type == "EXPERIMENT", t.jobs.c.entity_id == exp_id))
    conn.execute(t.experiments.delete().where(t.experiments.c.id == exp_id))


def context_archive(conn: Conn, exp_id: int) -> bytes | None:
    """The experiment's context .tgz as stored at create; None when the experiment does not exist."""
    return conn.execute(sa.select(t.contexts.c.archive).where(t.contexts.c.experiment_id == exp_id)).scalar()


def insert(conn: Conn, *, name: str, description: str | None, labels: list[str], owner: str, config: dict[str, Any],
           config_text: str, state: S, created_at: float, project_id: int = 1) -> int:
    """A new experiment (not archived, no progress, no searcher state yet) in `project_id`; returns its id. Its
    log retention is its config's `retention_policy.log_retention_days` (None: the master's)."""
    retention = (config.get("retention_policy") or {}).get("log_retention_days")
    return int(conn.execute(t.experiments.insert().values(
        project_id=project_id, log_retention_days=retention,
        name=name, description=description, labels=labels, owner=owner, config=config, config_text=config_text,
        state=state.value, archived=False, progress=0.0, searcher_state=None, created_at=created_at,
    ).returning(t.experiments.c.id)).scalar_one())


def set_name(conn: Conn, exp_id: int, name: str, config: dict[str, Any]) -> None:
    """Name the experiment (and its stored config, which holds the name too)."""
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(name=name, config=config))


def reopen(conn: Conn, exp_id: int, *, config: dict[str, Any], config_text: str) -> None:
    """A finished experiment is ACTIVE again (continued) with a new config: not ended, no error."""
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(
        state=S.ACTIVE.value, config=config, config_text=config_text, ended_at=None, error_message=None))


def insert_context(conn: Conn, exp_id: int, archive: bytes) -> None:
    """Store the experiment's context .tgz."""
    conn.execute(t.contexts.insert().values(experiment_id=exp_id, archive=archive))


def set_archived(conn: Conn, exp_id: int, archived: bool) -> None:
    """Hide the experiment from the default lists (or show it again)."""
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(archived=archived))


def set_state(conn: Conn, exp_id: int, state: S, *, ended_at: float | None = None, progress: float | None = None,
              error_message: str | None = None) -> None:
    """Move an experiment to `state`; the other columns change only where a value is given."""
    values: dict[str, Any] = {"state": state.value}
    for column, value in (("ended_at", ended_at), ("progress", progress), ("error_message", error_message)):
        if value is not None:
            values[column] = value
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(**values))


def save_search(conn: Conn, exp_id: int, searcher_state: Any, progress: float) -> None:
    """The searcher's snapshot and the experiment's progress as the searcher computes it."""
    conn.execute(t.experiments.update().where(t.experiments.c.id == exp_id).values(
        searcher_state=searcher_state, progress=progress))


def stopping_ids(conn: Conn) -> list[int]:
    """Ids of the experiments in a STOPPING_* state."""
    return [int(i) for i in conn.execute(
        sa.select(t.experiments.c.id).where(t.experiments.c.state.like("STOPPING_%"))).scalars().all()]


def live_names(conn: Conn) -> dict[int, dict[str, Any]]:
    """Experiment id -> {id, name, owner, workspace_id} of every experiment not COMPLETED, CANCELED or ERROR (the
    job queue's)."""
    ended = [s.value for s in (S.COMPLETED, S.CANCELED, S.ERROR)]
    return {r["id"]: dict(r) for r in conn.execute(
        sa.select(t.experiments.c.id, t.experiments.c.name, t.experiments.c.owner, t.projects.c.workspace_id)
        .join(t.projects, t.projects.c.id == t.experiments.c.project_id)
        .where(t.experiments.c.state.notin_(ended))).mappings()}
