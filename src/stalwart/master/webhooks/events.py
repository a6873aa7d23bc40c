"""What fires a webhook: an experiment reaching a state (`experiment_state_changed`, called in the transaction that
writes the state) and a trial's `core.alert()` (`alert`, a CUSTOM event). Each queues one PENDING delivery per
webhook whose trigger matches, in that transaction: the cluster's webhooks and those of the experiment's
workspace, never another workspace's. The delivery loop sends them (`delivery`)."""

from __future__ import annotations

import uuid
from typing import Any

from stalwart.api.errors import ForbiddenError, InvalidStateError
from stalwart.api.states import AllocationState
from stalwart.master.queries import (
    experiments as experiment_rows,
    runs,
    trials as trial_rows,
    webhooks as q,
    workspaces as wq,
)
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master, now
from stalwart.master.webhooks import payloads

WAKE = "webhooks"
"""The signal the delivery loop waits on (it also looks every second, for events queued without the Master)."""


def _experiment(conn: Conn, exp_id: int) -> tuple[dict[str, Any], int | None]:
    """The experiment's payload and its workspace id."""
    exp = experiment_rows.get(conn, exp_id)
    place = wq.places_of_experiments(conn, [exp_id]).get(exp_id)
    workspace_id = int(place["workspace_id"]) if place is not None else None
    return payloads.experiment_data(dict(exp), None if place is None else dict(place)), workspace_id


def _queue(conn: Conn, webhook_ids: list[int], ev: dict[str, Any]) -> int:
    at = now()
    unique = list(dict.fromkeys(webhook_ids))  # one delivery per webhook, however many of its triggers match
    for webhook_id in unique:
        q.insert_delivery(conn, str(uuid.uuid4()), webhook_id, ev, at)
    return len(unique)


def experiment_state_changed(conn: Conn, exp_id: int, state: str) -> int:
    """Queue the deliveries of the EXPERIMENT_STATE_CHANGE triggers whose condition `state` meets; how many."""
    place = wq.places_of_experiments(conn, [exp_id]).get(exp_id)
    workspace_id = int(place["workspace_id"]) if place is not None else None
    hits = [int(r["webhook_id"]) for r in q.matching(conn, payloads.STATE_CHANGE, workspace_id)
            if payloads.state_matches(r["condition"] or {}, state)]
    if not hits:
        return 0
    data = {"experiment": _experiment(conn, exp_id)[0]}
    return _queue(conn, hits, payloads.event(payloads.STATE_CHANGE, data, now(), {"state": state}))


def alert(m: Master, allocation_id: str, trial_id: int, title: str, description: str, level: str) -> int:
    """A trial's `core.alert()`: queue a CUSTOM delivery for each CUSTOM webhook of its workspace and of the
    cluster; how many. Only the trial's own live allocation may send it."""
    with m.db.begin() as conn:
        alloc = runs.find(conn, allocation_id)
        if alloc is None or alloc["trial_id"] != trial_id:
            raise ForbiddenError(f"this allocation token does not belong to trial {trial_id}")
        if alloc["state"] == AllocationState.TERMINATED.value:
            raise InvalidStateError(f"allocation {allocation_id} has ended; its alerts are no longer accepted")
        trial = trial_rows.get(conn, trial_id)
        exp, workspace_id = _experiment(conn, int(trial["experiment_id"]))
        hits = [int(r["webhook_id"]) for r in q.matching(conn, payloads.CUSTOM, workspace_id)]
        data = {"custom": {"title": title, "description": description, "level": level}, "experiment": exp,
                "trial_id": trial_id}
        queued = _queue(conn, hits, payloads.event(payloads.CUSTOM, data, now())) if hits else 0
    if queued:
        m.signals.notify(WAKE)
    return queued


def queue_test(conn: Conn, webhook_id: int) -> str:
    """Queue a test delivery to one webhook (`event_data: {"data": "test"}`); its delivery id."""
    delivery_id = str(uuid.uuid4())
    ev = payloads.event(payloads.STATE_CHANGE, {"data": "test"}, now(), {"state": "COMPLETED"})
    q.insert_delivery(conn, delivery_id, webhook_id, ev, now())
    return delivery_id
