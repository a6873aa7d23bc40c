"""Webhooks as the API sees them: create (its targets within `webhooks.allowed_hosts`, edit_webhooks on its
workspace or on the cluster), list those the caller may manage, delete, and queue a test delivery."""

from __future__ import annotations

import urllib.parse
from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.api.models.webhooks import CreateWebhook, TriggerView, Webhook
from stalwart.api.states import ExperimentState
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import webhooks as q, workspaces as wq
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, now
from stalwart.master.webhooks import events, payloads

STATES = ", ".join(s.value for s in ExperimentState)


def _host_allowed(allowed: tuple[str, ...], url: str) -> None:
    """Refuse (400) a URL whose host (or host:port) is not among `webhooks.allowed_hosts` (empty: any)."""
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host:
        raise InvalidRequest(f"url: {url!r} names no host; give an http(s) URL such as https://hooks.example.com/x")
    if not allowed:
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if host in allowed or f"{host}:{port}" in allowed:
        return
    raise InvalidRequest(f"url: host {host}:{port} is not in the master config's webhooks.allowed_hosts "
                         f"({', '.join(allowed)}): use one of those hosts, or have an admin add it there")


def _triggers(payload: CreateWebhook) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for i, trig in enumerate(payload.triggers):
        condition = dict(trig.condition)
        if trig.trigger_type == payloads.STATE_CHANGE:
            state = condition.get("state")
            if set(condition) != {"state"} or state not in {s.value for s in ExperimentState}:
                raise InvalidRequest(f"triggers[{i}].condition: an EXPERIMENT_STATE_CHANGE trigger needs "
                                     f'{{"state": STATE}} with one of {STATES}, got {condition!r}')
        elif condition:
            raise InvalidRequest(f"triggers[{i}].condition: a CUSTOM trigger takes no condition, got {condition!r}")
        out.append((trig.trigger_type, condition))
    return out


def _workspace(conn: Conn, payload: CreateWebhook) -> Row | None:
    if payload.workspace_id is None and payload.workspace is None:
        return None
    row = (wq.workspace(conn, payload.workspace_id) if payload.workspace_id is not None
           else wq.workspace_by_name(conn, str(payload.workspace)))
    if row is None:
        named = payload.workspace_id if payload.workspace_id is not None else payload.workspace
        raise NotFoundError(f"workspace {named} not found (`stalwart workspace list`)")
    if payload.workspace is not None and row["name"] != payload.workspace:
        raise InvalidRequest(f"workspace_id {payload.workspace_id} is workspace {row['name']}, not "
                             f"{payload.workspace}: give one of the two")
    return row


def create(m: Master, ident: Identity, payload: CreateWebhook) -> Webhook:
    triggers = _triggers(payload)
    with m.db.begin() as conn:
        ws = _workspace(conn, payload)
    if ws is None:
        authz.require(m, ident, P.EDIT_WEBHOOKS, authz.Target("the whole cluster (a webhook of no workspace)"))
    else:
        authz.require(m, ident, P.EDIT_WEBHOOKS, authz.Target(f"workspace {ws['name']}", ws["created_by"],
                                                              int(ws["id"])))
    _host_allowed(m.settings.cluster.webhooks.allowed_hosts, payload.url)
    with m.db.begin() as conn:
        webhook_id = q.insert(conn, name=payload.name or payload.url, url=payload.url,
                              webhook_type=payload.webhook_type, workspace_id=None if ws is None else int(ws["id"]),
                              owner=ident.username, created_at=now(), triggers=triggers)
        return views(conn, [_existing(conn, webhook_id)])[0]


def views(conn: Conn, rows: list[Row]) -> list[Webhook]:
    ids = [int(r["id"]) for r in rows]
    triggers = q.triggers_of(conn, ids)
    names = {int(w["id"]): str(w["name"]) for w in wq.all_workspaces(conn)}
    return [Webhook(id=int(r["id"]), name=r["name"], url=r["url"], webhook_type=r["webhook_type"],
                    workspace_id=r["workspace_id"],
                    workspace=None if r["workspace_id"] is None
                    else names.get(r["workspace_id"], f"(deleted workspace {r['workspace_id']})"),
                    owner=r["owner"], created_at=r["created_at"],
                    triggers=[TriggerView(trigger_type=t["trigger_type"], condition=t["condition"] or {})
                              for t in triggers[int(r["id"])]]) for r in rows]


def listing(m: Master, ident: Identity) -> list[Webhook]:
    """The webhooks the caller may manage: all (admins, ClusterAdmin, basic mode's admins), else those of the
    workspaces where a role of theirs grants edit_webhooks."""
    where = authz.viewable_workspaces(m, ident, P.EDIT_WEBHOOKS)
    with m.db.begin() as conn:
        return views(conn, q.listed(conn, where, cluster_wide=where is None))


def _existing(conn: Conn, webhook_id: int) -> Row:
    row = q.find(conn, webhook_id)
    if row is None:
        raise NotFoundError(f"webhook {webhook_id} not found (`stalwart webhook list`)")
    return row


def delete(m: Master, webhook_id: int) -> None:
    with m.db.begin() as conn:
        _existing(conn, webhook_id)
        q.delete(conn, webhook_id)


def test(m: Master, webhook_id: int) -> str:
    """Queue a test delivery; its delivery id."""
    with m.db.begin() as conn:
        _existing(conn, webhook_id)
        delivery_id = events.queue_test(conn, webhook_id)
    m.signals.notify(events.WAKE)
    return delivery_id
