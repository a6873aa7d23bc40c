"""`stalwart e delete|set|label`: delete an experiment, change its name, description, notes, labels or job keys."""

from __future__ import annotations

import click

from stalwart.api.errors import NotFoundError
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of
from stalwart.cli.jobs import SET_KEYS, set_job_value

TEXT_KEYS = ("name", "description", "notes")
"""Keys `e set` changes on the experiment itself (the others are its job's scheduling keys)."""

DELETE_WARNING = ("Deleting experiment {id} removes its checkpoints' files from storage, then its trials, metrics, "
                  "logs and checkpoint records, for good. `stalwart e archive {id}` hides it instead. Delete it?")


@click.command("delete")
@click.argument("exp_id", type=int)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx: click.Context, exp_id: int, yes: bool) -> None:
    """Delete an ended experiment with its checkpoints' files (refused while it is not in a terminal state)."""
    client = client_of(ctx)
    client.get_experiment(exp_id)  # an unknown id fails here, before the question
    if not yes and not click.confirm(DELETE_WARNING.format(id=exp_id), default=False, err=True):
        output.console.print(f"Kept experiment {exp_id}.")
        return
    client.delete_experiment(exp_id)
    output.console.print(f"Deleted experiment {exp_id} and its checkpoints.")


@click.command("set")
@click.argument("key", type=click.Choice([*TEXT_KEYS, *SET_KEYS]))
@click.argument("exp_id", type=int)
@click.argument("value")
@click.pass_context
def set_(ctx: click.Context, key: str, exp_id: int, value: str) -> None:
    """Set an experiment's name, description or notes, or its priority, weight or max-slots (effective on the next
    scheduling pass)."""
    client = client_of(ctx)
    if key not in TEXT_KEYS:
        set_job_value(client, "experiment", key, exp_id, value)
        return
    exp = client.patch_experiment(exp_id, name=value if key == "name" else None,
                                  description=value if key == "description" else None,
                                  notes=value if key == "notes" else None).experiment
    output.console.print(f"Experiment {exp_id}: {key} is now {getattr(exp, key)!r}.")


@click.group("label", cls=AliasedGroup, aliases={"rm": "remove"})
def label() -> None:
    """Add or remove an experiment's labels."""


@label.command("add")
@click.argument("exp_id", type=int)
@click.argument("name")
@click.pass_context
def label_add(ctx: click.Context, exp_id: int, name: str) -> None:
    """Add label NAME to experiment EXP_ID."""
    client = client_of(ctx)
    labels = client.get_experiment(exp_id).experiment.labels
    if name in labels:
        output.console.print(f"Experiment {exp_id} already has label {name!r}; labels: {', '.join(labels)}.")
        return
    labels = client.patch_experiment(exp_id, labels=[*labels, name]).experiment.labels
    output.console.print(f"Added label {name!r} to experiment {exp_id}; labels: {', '.join(labels)}.")


@label.command("remove")
@click.argument("exp_id", type=int)
@click.argument("name")
@click.pass_context
def label_remove(ctx: click.Context, exp_id: int, name: str) -> None:
    """Remove label NAME from experiment EXP_ID (an error if it does not have it)."""
    client = client_of(ctx)
    labels = client.get_experiment(exp_id).experiment.labels
    if name not in labels:
        has = f"its labels are {', '.join(map(repr, labels))}" if labels else "it has no labels"
        raise NotFoundError(f"experiment {exp_id} has no label {name!r} ({has})")
    labels = client.patch_experiment(exp_id, labels=[lb for lb in labels if lb != name]).experiment.labels
    output.console.print(f"Removed label {name!r} from experiment {exp_id}; labels: {', '.join(labels) or 'none'}.")
