"""`stalwart webhook create|list|delete|test`: webhooks that POST to a URL when experiments reach a state or a
trial calls `core.alert()` (docs/webhooks.md)."""

from __future__ import annotations

from typing import Any

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.states import ExperimentState
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options

STATES = [s.value for s in ExperimentState]
TRIGGER_FORMS = "experiment-state:STATE[,STATE...] (e.g. experiment-state:COMPLETED,ERROR) or custom"


@click.group("webhook", cls=AliasedGroup, aliases={"ls": "list", "rm": "delete"})
def webhook() -> None:
    """Create, list, delete and test webhooks.

    A webhook POSTs a signed JSON payload (or a Slack message) to its URL when an experiment reaches one of the
    states its triggers name, or when a trial calls `core.alert()` (a `custom` trigger). A workspace's webhook
    (--workspace) fires only for that workspace's experiments and needs edit_webhooks there (WorkspaceAdmin); one
    of the whole cluster needs it on the cluster (ClusterAdmin, or an admin)."""


def parse_trigger(text: str) -> list[dict[str, Any]]:
    """One --trigger as the API's triggers: `custom`, or `experiment-state:COMPLETED,ERROR` (one per state)."""
    kind, _, rest = text.strip().partition(":")
    kind = kind.lower().replace("_", "-")
    if kind == "custom" and not rest:
        return [{"trigger_type": "CUSTOM"}]
    if kind in ("experiment-state", "experiment-state-change") and rest:
        states = [s.strip().upper() for s in rest.split(",") if s.strip()]
        bad = [s for s in states if s not in STATES]
        if states and not bad:
            return [{"trigger_type": "EXPERIMENT_STATE_CHANGE", "condition": {"state": s}} for s in states]
        if bad:
            raise InvalidRequest(f"--trigger {text!r}: {', '.join(bad)} is no experiment state; use "
                                 f"{', '.join(STATES)}")
    raise InvalidRequest(f"--trigger {text!r}: give {TRIGGER_FORMS}")


def describe_triggers(triggers: list[Any]) -> str:
    states = [t.condition.get("state") for t in triggers if t.trigger_type == "EXPERIMENT_STATE_CHANGE"]
    parts = [f"experiment-state:{','.join(str(s) for s in states)}"] if states else []
    if any(t.trigger_type == "CUSTOM" for t in triggers):
        parts.append("custom")
    return " ".join(parts)


@webhook.command("create")
@click.argument("url")
@click.option("-t", "--trigger", "triggers", multiple=True, required=True, metavar="TRIGGER",
              help=f"What fires it (repeatable): {TRIGGER_FORMS}.")
@click.option("--type", "webhook_type", type=click.Choice(["default", "slack"], case_sensitive=False),
              default="default", show_default=True, help="default: signed JSON; slack: a Slack message.")
@click.option("-w", "--workspace", default=None, help="Whose webhook (a workspace name; default: the cluster's).")
@click.option("-n", "--name", default=None, help="A name to tell it by (default: its URL).")
@click.option("--json", "as_json", is_flag=True, help="Print the webhook as JSON.")
@click.pass_context
def create(ctx: click.Context, url: str, triggers: tuple[str, ...], webhook_type: str, workspace: str | None,
           name: str | None, as_json: bool) -> None:
    """Create a webhook that POSTs to URL.

    Each delivery is signed (X-Stalwart-Signature, docs/webhooks.md) and retried until the receiver answers
    2xx (at most 10 attempts). The URL's host must be among the master config's webhooks.allowed_hosts when that
    is set."""
    parsed = [t for text in triggers for t in parse_trigger(text)]
    made = client_of(ctx).create_webhook(url, parsed, webhook_type=webhook_type.upper(), name=name,
                                         workspace=workspace).webhook
    if as_json:
        output.print_json(made)
        return
    where = f"workspace {made.workspace}" if made.workspace else "the whole cluster"
    output.console.print(f"Created webhook {made.id} of {where}: {describe_triggers(made.triggers)} -> "
                         f"{made.url} ({made.webhook_type}).")


@webhook.command("list")
@format_options
@click.pass_context
def list_webhooks(ctx: click.Context, fmt: output.Format) -> None:
    """List the webhooks you may manage.

    Admins and ClusterAdmins see all of them; others those of the workspaces where they hold edit_webhooks
    (WorkspaceAdmin)."""
    hooks = client_of(ctx).list_webhooks()
    output.emit(fmt, ["ID", "Name", "Workspace", "Type", "Triggers", "URL", "Owner", "Created"],
                [(h.id, h.name, h.workspace or "(cluster)", h.webhook_type, describe_triggers(h.triggers), h.url,
                  h.owner, output.when(h.created_at)) for h in hooks],
                json_data={"webhooks": [h.model_dump(mode="json") for h in hooks]})


@webhook.command("delete")
@click.argument("webhook_id", type=click.IntRange(0), metavar="ID")
@click.pass_context
def delete(ctx: click.Context, webhook_id: int) -> None:
    """Delete a webhook; its deliveries not yet made are dropped."""
    client_of(ctx).delete_webhook(webhook_id)
    output.console.print(f"Deleted webhook {webhook_id}.")


@webhook.command("test")
@click.argument("webhook_id", type=click.IntRange(0), metavar="ID")
@click.pass_context
def test(ctx: click.Context, webhook_id: int) -> None:
    """Send a test event to a webhook.

    The event (`event_data: {"data": "test"}`) is signed, delivered and retried like any other."""
    queued = client_of(ctx).test_webhook(webhook_id)
    output.console.print(f"Queued test delivery {queued.delivery_id} to webhook {webhook_id}.")
