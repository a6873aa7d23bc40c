"""Reads and writes of the webhooks tables: webhooks, their triggers, and their deliveries (docs/webhooks.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_W, _T, _D = t.webhooks.c, t.webhook_triggers.c, t.webhook_deliveries.c
PENDING, DELIVERED, FAILED = "PENDING", "DELIVERED", "FAILED"


def insert(conn: Conn, *, name: str, url: str, webhook_type: str, workspace_id: int | None, owner: str,
           created_at: float, triggers: Iterable[tuple[str, dict[str, Any]]]) -> int:
    """A new webhook with its triggers (type, condition); returns its id."""
    webhook_id = int(conn.execute(t.webhooks.insert().values(
        name=name, url=url, webhook_type=webhook_type, workspace_id=workspace_id, owner=owner,
        created_at=created_at).returning(_W.id)).scalar_one())
    conn.execute(t.webhook_triggers.insert(), [
        {"webhook_id": webhook_id, "trigger_type": kind, "condition": condition} for kind, condition in triggers])
    return webhook_id


def find(conn: Conn, webhook_id: int) -> Row | None:
    return conn.execute(sa.select(t.webhooks).where(_W.id == webhook_id)).mappings().first()


def place(conn: Conn, webhook_id: int) -> tuple[str, int | None] | None:
    """(owner, workspace id or None for the cluster's) of a webhook; None when there is none."""
    row = conn.execute(sa.select(_W.owner, _W.workspace_id).where(_W.id == webhook_id)).first()
    if row is None:
        return None
    return str(row.owner), None if row.workspace_id is None else int(row.workspace_id)


def listed(conn: Conn, workspaces: set[int] | None, *, cluster_wide: bool) -> list[Row]:
    """Webhooks by id: of `workspaces` (None: of every workspace) and, with `cluster_wide`, the cluster's."""
    query = sa.select(t.webhooks).order_by(_W.id)
    if workspaces is not None:
        ours = _W.workspace_id.in_(sorted(workspaces))
        query = query.where(sa.or_(ours, _W.workspace_id.is_(None)) if cluster_wide else ours)
    elif not cluster_wide:
        query = query.where(_W.workspace_id.is_not(None))
    return list(conn.execute(query).mappings().all())


def triggers_of(conn: Conn, webhook_ids: list[int]) -> dict[int, list[Row]]:
    out: dict[int, list[Row]] = {i: [] for i in webhook_ids}
    for row in conn.execute(sa.select(t.webhook_triggers).where(_T.webhook_id.in_(webhook_ids))
                            .order_by(_T.id)).mappings():
        out[int(row["webhook_id"])].append(row)
    return out


def delete(conn: Conn, webhook_id: int) -> None:
    """The webhook, its triggers and its deliveries (pending ones are never sent)."""
    conn.execute(t.webhook_deliveries.delete().where(_D.webhook_id == webhook_id))
    conn.execute(t.webhook_triggers.delete().where(_T.webhook_id == webhook_id))
    conn.execute(t.webhooks.delete().where(_W.id == webhook_id))


def delete_of_workspace(conn: Conn, workspace_id: int) -> int:
    """Every webhook of the workspace, as `delete` deletes one; how many there were."""
    ids = [int(r[0]) for r in conn.execute(sa.select(_W.id).where(_W.workspace_id == workspace_id))]
    for webhook_id in ids:
        delete(conn, webhook_id)
    return len(ids)


def matching(conn: Conn, trigger_type: str, workspace_id: int | None) -> list[Row]:
    """(webhook_id, condition) of every trigger of `trigger_type` of the cluster's webhooks and of
    `workspace_id`'s."""
    where: sa.ColumnElement[bool] = _W.workspace_id.is_(None)
    if workspace_id is not None:
        where = sa.or_(where, _W.workspace_id == workspace_id)
    return list(conn.execute(sa.select(_T.webhook_id, _T.condition).join(t.webhooks, _W.id == _T.webhook_id)
                             .where(_T.trigger_type == trigger_type, where).order_by(_T.id)).mappings().all())


# -- deliveries -----------------------------------------------------------------------------------------
def insert_delivery(conn: Conn, delivery_id: str, webhook_id: int, event: dict[str, Any], now: float) -> None:
    """A PENDING delivery, due now: stored before it is attempted."""
    conn.execute(t.webhook_deliveries.insert().values(
        id=delivery_id, webhook_id=webhook_id, event=event, state=PENDING, attempts=0, next_attempt_at=now,
        last_error=None, created_at=now, ended_at=None))


def due(conn: Conn, now: float, limit: int, skip: Iterable[str]) -> list[Row]:
    """Up to `limit` PENDING deliveries due by `now` (oldest first), not those of `skip` (in flight), each with its
    webhook's url and type."""
    query = (sa.select(_D.id, _D.webhook_id, _D.event, _D.attempts, _W.url, _W.webhook_type)
             .join(t.webhooks, _W.id == _D.webhook_id)
             .where(_D.state == PENDING, _D.next_attempt_at <= now).order_by(_D.next_attempt_at, _D.id).limit(limit))
    skipped = list(skip)
    if skipped:
        query = query.where(_D.id.not_in(skipped))
    return list(conn.execute(query).mappings().all())


def delivered(conn: Conn, delivery_id: str, attempts: int, now: float) -> None:
    conn.execute(t.webhook_deliveries.update().where(_D.id == delivery_id).values(
        state=DELIVERED, attempts=attempts, ended_at=now, last_error=None))


def retry_later(conn: Conn, delivery_id: str, attempts: int, at: float, error: str) -> None:
    conn.execute(t.webhook_deliveries.update().where(_D.id == delivery_id, _D.state == PENDING).values(
        attempts=attempts, next_attempt_at=at, last_error=error))


def failed(conn: Conn, delivery_id: str, attempts: int, now: float, error: str) -> None:
    conn.execute(t.webhook_deliveries.update().where(_D.id == delivery_id).values(
        state=FAILED, attempts=attempts, ended_at=now, last_error=error))


def delivery(conn: Conn, delivery_id: str) -> Row | None:
    return conn.execute(sa.select(t.webhook_deliveries).where(_D.id == delivery_id)).mappings().first()
