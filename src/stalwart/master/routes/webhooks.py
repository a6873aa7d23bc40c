"""/api/v1/webhooks: create, list, delete and test webhooks; and /api/v1/trials/{id}/alerts, a trial's
`core.alert()` (docs/webhooks.md)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from stalwart.api.models.common import Empty
from stalwart.api.models.webhooks import (
    Alert,
    AlertQueued,
    CreateWebhook,
    TestDelivery,
    WebhookEnvelope,
    WebhookList,
)
from stalwart.master.routes.common import IdPath, identity, master
from stalwart.master.routes.contract import route
from stalwart.master.webhooks import events, hooks

router = APIRouter(prefix="/api/v1", tags=["webhooks"])



@route(router, "POST", "/webhooks")
async def create_webhook(request: Request, payload: CreateWebhook) -> WebhookEnvelope:
    return WebhookEnvelope(webhook=hooks.create(master(request), identity(request), payload))


@route(router, "GET", "/webhooks")
async def list_webhooks(request: Request) -> WebhookList:
    return WebhookList(webhooks=hooks.listing(master(request), identity(request)))


@route(router, "DELETE", "/webhooks/{webhook_id}")
async def delete_webhook(request: Request, webhook_id: IdPath) -> Empty:
    hooks.delete(master(request), webhook_id)
    return Empty()


@route(router, "POST", "/webhooks/{webhook_id}/test")
async def test_webhook(request: Request, webhook_id: IdPath) -> TestDelivery:
    return TestDelivery(delivery_id=hooks.test(master(request), webhook_id))


@route(router, "POST", "/trials/{trial_id}/alerts")
async def trial_alert(request: Request, trial_id: IdPath, payload: Alert) -> AlertQueued:
    queued = events.alert(master(request), str(request.state.allocation_id), trial_id, payload.title,
                          payload.description, payload.level)
    return AlertQueued(deliveries=queued)
