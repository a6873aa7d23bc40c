"""Webhooks: create, list, delete and test them (users); a trial's alert (its allocation token)."""

from __future__ import annotations

from typing import Any

from stalwart.api.models import common, webhooks
from stalwart.client.endpoints import Api, body, endpoint

W = "/api/v1/webhooks"

CREATE = endpoint("POST", W, webhooks.WebhookEnvelope, webhooks.CreateWebhook)
LIST = endpoint("GET", W, webhooks.WebhookList)
DELETE = endpoint("DELETE", W + "/{webhook_id}", common.Empty)
TEST = endpoint("POST", W + "/{webhook_id}/test", webhooks.TestDelivery)
ALERT = endpoint("POST", "/api/v1/trials/{trial_id}/alerts", webhooks.AlertQueued, webhooks.Alert)


class WebhooksApi(Api):
    def create_webhook(self, url: str, triggers: list[dict[str, Any]], *, webhook_type: str = "DEFAULT",
                       name: str | None = None, workspace: str | None = None) -> webhooks.WebhookEnvelope:
        """A webhook of `workspace` (by name), or of the whole cluster (None); `triggers` as
        `[{"trigger_type": "EXPERIMENT_STATE_CHANGE", "condition": {"state": "COMPLETED"}}, ...]`."""
        fields: dict[str, Any] = {"url": url, "triggers": triggers, "webhook_type": webhook_type}
        if name is not None:
            fields["name"] = name
        if workspace is not None:
            fields["workspace"] = workspace
        return self.call(CREATE, json_body=body(webhooks.CreateWebhook, **fields))

    def list_webhooks(self) -> list[webhooks.Webhook]:
        return self.call(LIST).webhooks

    def delete_webhook(self, webhook_id: int) -> common.Empty:
        return self.call(DELETE, path={"webhook_id": webhook_id})

    def test_webhook(self, webhook_id: int) -> webhooks.TestDelivery:
        return self.call(TEST, path={"webhook_id": webhook_id}, json_body={})

    # -- from inside the trial (allocation token) ------------------------------------------------------
    def send_alert(self, trial_id: int, title: str, description: str, level: str) -> webhooks.AlertQueued:
        return self.call(ALERT, path={"trial_id": trial_id}, json_body=body(
            webhooks.Alert, title=title, description=description, level=level))
