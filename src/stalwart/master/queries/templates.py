"""Reads and writes of configuration templates (`config_templates`, docs/templates.md)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t, task_tables as tt
from stalwart.master.queries.rows import Conn, Row

_T = tt.config_templates.c
_W = t.workspaces.c


def _templates() -> sa.Select[Any]:
    return (sa.select(tt.config_templates, _W.name.label("workspace"))
            .join(t.workspaces, _W.id == _T.workspace_id))


def find(conn: Conn, name: str) -> Row | None:
    """The template of that name, with its workspace's name."""
    return conn.execute(_templates().where(_T.name == name)).mappings().first()


def place(conn: Conn, name: str) -> tuple[str, int] | None:
    """(owner, workspace id) of a template, for the permission check."""
    row = conn.execute(sa.select(_T.owner, _T.workspace_id).where(_T.name == name)).first()
    return (str(row.owner), int(row.workspace_id)) if row is not None else None


def listed(conn: Conn, workspace_ids: set[int] | None) -> list[Row]:
    """Templates by name: those of `workspace_ids` (None: of every workspace)."""
    query = _templates().order_by(_T.name)
    if workspace_ids is not None:
        query = query.where(_T.workspace_id.in_(sorted(workspace_ids)))
    return list(conn.execute(query).mappings().all())


def names_in(conn: Conn, workspace_id: int) -> list[str]:
    """The names of the templates of a workspace (a workspace holding any is not deleted)."""
    return list(conn.execute(sa.select(_T.name).where(_T.workspace_id == workspace_id).order_by(_T.name)).scalars())


def insert(conn: Conn, **values: Any) -> None:
    conn.execute(sa.insert(tt.config_templates).values(**values))


def update(conn: Conn, name: str, **values: Any) -> None:
    conn.execute(sa.update(tt.config_templates).where(_T.name == name).values(**values))


def delete(conn: Conn, name: str) -> None:
    conn.execute(sa.delete(tt.config_templates).where(_T.name == name))
