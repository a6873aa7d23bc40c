"""Webhooks (docs/webhooks.md): a target URL, its type and triggers, and the alerts a trial sends (Determined's
nouns: trigger types EXPERIMENT_STATE_CHANGE and CUSTOM, webhook types DEFAULT and SLACK)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from stalwart.api.models.common import Id, Request, Response, Timestamp

TriggerType = Literal["EXPERIMENT_STATE_CHANGE", "CUSTOM"]
WebhookType = Literal["DEFAULT", "SLACK"]
AlertLevel = Literal["DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL"]
Url = Annotated[str, Field(min_length=8, max_length=2048, pattern=r"^https?://[^\s]+$",
                           description="where the payloads are POSTed: an http(s) URL")]
WebhookName = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f]+$")]


class Trigger(Request):
    """What fires the webhook: an experiment reaching a state (`condition: {"state": "COMPLETED"}`), or a trial's
    `core.alert()` (CUSTOM; no condition)."""

    trigger_type: TriggerType
    condition: dict[str, Any] = Field(default_factory=dict, max_length=8)


class CreateWebhook(Request):
    url: Url
    name: WebhookName | None = None
    webhook_type: WebhookType = "DEFAULT"
    triggers: list[Trigger] = Field(min_length=1, max_length=32)
    workspace_id: Id | None = None  # None (and no `workspace`): a webhook of the whole cluster
    workspace: Annotated[str, Field(min_length=1, max_length=128)] | None = None  # the workspace by name


class TriggerView(Response):
    trigger_type: str
    condition: dict[str, Any] = Field(default_factory=dict)


class Webhook(Response):
    id: int
    name: str
    url: str
    webhook_type: str
    workspace_id: int | None = None
    workspace: str | None = None
    owner: str
    created_at: Timestamp
    triggers: list[TriggerView]


class WebhookEnvelope(Response):
    webhook: Webhook


class WebhookList(Response):
    webhooks: list[Webhook]


class TestDelivery(Response):
    """The delivery a test queued (its id is the `X-Stalwart-Delivery-Id` header the receiver gets)."""

    __test__ = False  # not a pytest test class
    delivery_id: str


class Alert(Request):
    """`core.alert(title, description, level)` from a trial: sent to the CUSTOM webhooks of its workspace and of
    the cluster."""

    title: Annotated[str, Field(max_length=1024)] = ""
    description: Annotated[str, Field(max_length=16384)] = ""
    level: AlertLevel = "INFO"


class AlertQueued(Response):
    deliveries: int  # how many deliveries were queued (0: no CUSTOM webhook applies)
