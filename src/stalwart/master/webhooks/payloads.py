"""What a webhook sends: Determined's event payload (event_id, event_type, timestamp, condition, event_data) as
JSON for DEFAULT webhooks, or a Slack blocks message for SLACK ones. Pure: no database, no network."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

STATE_CHANGE, CUSTOM = "EXPERIMENT_STATE_CHANGE", "CUSTOM"
TRIGGER_TYPES = (STATE_CHANGE, CUSTOM)
DEFAULT, SLACK = "DEFAULT", "SLACK"
WEBHOOK_TYPES = (DEFAULT, SLACK)
_GOOD, _BAD, _NEUTRAL = "#13B670", "#DD5040", "#888888"


def experiment_data(exp: Mapping[str, Any], place: Mapping[str, Any] | None) -> dict[str, Any]:
    """An experiment as a webhook carries it (Determined's ExperimentPayload): id, state, name, duration in
    seconds, resource pool, slots per trial, workspace and project names."""
    config = exp.get("config") or {}
    resources = config.get("resources") or {}
    ended = exp.get("ended_at")
    duration = int(max(0.0, float(ended) - float(exp["created_at"]))) if ended is not None else 0
    return {"id": int(exp["id"]), "state": str(exp["state"]), "name": str(exp["name"]), "duration": duration,
            "resource_pool": resources.get("resource_pool") or "default",
            "slots_per_trial": int(resources.get("slots_per_trial") or 1),
            "workspace": place["workspace"] if place is not None else "",
            "project": place["project"] if place is not None else ""}


def event(event_type: str, data: dict[str, Any], timestamp: float, condition: dict[str, Any] | None = None,
          ) -> dict[str, Any]:
    """One event: what every webhook it goes to is sent (a DEFAULT one as it is)."""
    return {"event_id": str(uuid.uuid4()), "event_type": event_type, "timestamp": int(timestamp),
            "condition": condition or {}, "event_data": data}


def render(webhook_type: str, ev: Mapping[str, Any], base_url: str = "") -> bytes:
    """The body a webhook of `webhook_type` gets for the event (UTF-8 JSON)."""
    body = slack_message(ev, base_url) if webhook_type == SLACK else ev
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def _experiment_line(exp: Mapping[str, Any], base_url: str) -> str:
    name = f"{exp.get('name')} (id {exp.get('id')})"
    if base_url:
        name = f"<{base_url.rstrip('/')}/experiments/{exp.get('id')}|{name}>"
    return name


def slack_message(ev: Mapping[str, Any], base_url: str = "") -> dict[str, Any]:
    """A Slack blocks message of the event (`blocks`, and an `attachments` entry colored by the outcome)."""
    data = ev.get("event_data") or {}
    exp = data.get("experiment") or {}
    if ev.get("event_type") == CUSTOM:
        custom = data.get("custom") or {}
        head = f"*{custom.get('title') or 'Alert'}* ({custom.get('level', 'INFO')})"
        text = str(custom.get("description") or "")
        color = _BAD if custom.get("level") in ("ERROR", "CRITICAL") else _NEUTRAL
    elif exp:
        head = f"Experiment {_experiment_line(exp, base_url)} is {exp.get('state')}"
        text = f"Duration: {exp.get('duration', 0)} s"
        color = _GOOD if exp.get("state") == "COMPLETED" else _BAD if exp.get("state") == "ERROR" else _NEUTRAL
    else:
        head, text, color = "Stalwart webhook test", str(data.get("data") or ""), _NEUTRAL
    fields = [{"type": "mrkdwn", "text": f"*{k.title()}*: {exp[k]}"} for k in ("workspace", "project")
              if exp.get(k)]
    if ev.get("event_type") == CUSTOM and exp:
        fields.insert(0, {"type": "mrkdwn", "text": f"*Experiment*: {_experiment_line(exp, base_url)}"})
    detail: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": text or " "}}
    if fields:
        detail["fields"] = fields
    return {"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": head}}],
            "attachments": [{"color": color, "blocks": [detail]}]}


def state_matches(condition: Mapping[str, Any], state: str) -> bool:
    """Does an EXPERIMENT_STATE_CHANGE trigger's condition hold for an experiment now in `state`?"""
    wanted = condition.get("state")
    return wanted is None or str(wanted) == state
