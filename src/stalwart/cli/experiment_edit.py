"""`stalwart e delete|set|label`: delete an experiment, change its name, description, notes, labels, job keys,
checkpoint GC policy or log retention."""

from __future__ import annotations

import click

from stalwart.api.errors import NotFoundError
from stalwart.api.models.experiments import DeletedExperiment
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of
from stalwart.cli.experiment_gc import gc_policy
from stalwart.cli.jobs import SET_KEYS, set_job_value

TEXT_KEYS = ("name", "description", "notes")
"""Keys `e set` changes on the experiment itself (the others are its job's scheduling keys)."""

DELETE_WARNING = ("Deleting experiment {id} removes its checkpoints' and TensorBoard files from storage (but "
                  "checkpoints other experiments started from), then its trials, metrics, logs and checkpoint records, "
                  "for good. `stalwart e archive {id}` hides it instead. Delete it?")


@click.command("delete")
@click.argument("exp_id", type=int)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx: click.Context, exp_id: int, yes: bool) -> None:
    """Delete an ended experiment and its files for good.

    Its checkpoints' files leave storage, then its trials, metrics, logs and checkpoint records go. Only a
    COMPLETED, CANCELED or ERROR experiment can be deleted (`cancel` or `kill` it first); it asks before deleting
    unless --yes. `archive` only hides an experiment from `e list`, and `checkpoint delete` removes single
    checkpoints."""
    client = client_of(ctx)
    client.get_experiment(exp_id)  # an unknown id fails here, before the question
    if not yes and not click.confirm(DELETE_WARNING.format(id=exp_id), default=False, err=True):
        output.console.print(f"Kept experiment {exp_id}.")
        return
    done = client.delete_experiment(exp_id)
    print_deleted(exp_id, done)


def print_deleted(exp_id: int, done: DeletedExperiment) -> None:
    """What `e delete` removed, and each checkpoint it kept with who still uses it."""
    files = f"the files of {_checkpoints(done.deleted_checkpoints)}" if done.deleted_checkpoints else "its files"
    output.console.print(f"Deleted experiment {exp_id}: {files} and its records.", markup=False)
    if not done.kept_checkpoints:
        return
    output.console.print(f"Kept {_checkpoints(len(done.kept_checkpoints))} (files and record) that other experiments "
                         "use; deleting the experiments that use them deletes them too:", markup=False)
    for kept in done.kept_checkpoints:
        output.console.print(f"  {kept.uuid}: {kept.reason}", markup=False, soft_wrap=True)


def _checkpoints(n: int) -> str:
    return f"{n} checkpoint{'' if n == 1 else 's'}"


@click.group("set", cls=AliasedGroup)
def set_() -> None:
    """Change an experiment's name, scheduling or GC policy.

    `e set name|description|notes ID VALUE` change what `describe` and the web UI show; `e set
    priority|weight|max-slots ID VALUE` change its job's keys in the queue (priority: 1 most urgent .. 99; weight:
    its fair share; max-slots: the most slots its trials hold at once), on the next scheduling pass (`job update`
    also moves a job in the queue or to another pool); `e set gc-policy ID ...` changes which checkpoints it keeps;
    `e set log-retention ID --days N|--forever` how long its trials' logs are kept."""


TEXT_HELP = {
    "name": "Rename an experiment.\n\nVALUE is its new name, as `e list`, `describe` and the web UI show it.",
    "description": "Replace an experiment's description.\n\nVALUE is the new one-line description `describe` shows.",
    "notes": "Replace an experiment's notes.\n\nVALUE is the new notes (any text) the web UI shows.",
}
JOB_HELP = {
    "priority": "Move an experiment's job up or down by priority.\n\nVALUE: 1 (most urgent) .. 99.",
    "weight": "Change an experiment's fair-share weight.\n\nVALUE: a number > 0, its share under fair-share.",
    "max-slots": "Cap the slots an experiment's trials hold at once.\n\nVALUE: the most slots, on the next pass.",
}


def _text_setter(key: str) -> click.Command:
    @click.command(key, help=TEXT_HELP[key])
    @click.argument("exp_id", type=int)
    @click.argument("value")
    @click.pass_context
    def set_text(ctx: click.Context, exp_id: int, value: str) -> None:
        exp = client_of(ctx).patch_experiment(exp_id, name=value if key == "name" else None,
                                              description=value if key == "description" else None,
                                              notes=value if key == "notes" else None).experiment
        output.console.print(f"Experiment {exp_id}: {key} is now {getattr(exp, key)!r}.")

    return set_text


def _job_setter(key: str) -> click.Command:
    @click.command(key, help=JOB_HELP[key])
    @click.argument("exp_id", type=int)
    @click.argument("value")
    @click.pass_context
    def set_job_key(ctx: click.Context, exp_id: int, value: str) -> None:
        set_job_value(client_of(ctx), "experiment", key, exp_id, value)

    return set_job_key


for _key in TEXT_KEYS:
    set_.add_command(_text_setter(_key))
for _key in SET_KEYS:
    set_.add_command(_job_setter(_key))
set_.add_command(gc_policy)


@set_.command("log-retention")
@click.argument("exp_id", type=int)
@click.option("--days", type=click.IntRange(0, 32767), help="Keep its trials' logs this many days after they end.")
@click.option("--forever", is_flag=True, help="Keep its trials' logs for good.")
@click.pass_context
def log_retention(ctx: click.Context, exp_id: int, days: int | None, forever: bool) -> None:
    """Change how long an ended experiment's trial logs are kept.

    Give --days N (from the end of each trial; 0 deletes them at the master's next cleanup) or --forever. It
    overrides the master config's retention_policy for this experiment."""
    if (days is None) == (not forever):
        raise click.UsageError("give exactly one of --days N or --forever")
    num_days = -1 if forever else int(days or 0)
    client_of(ctx).set_log_retention(exp_id, num_days)
    kept = "for good" if forever else f"{num_days} day(s) after each trial ends"
    output.console.print(f"Experiment {exp_id}: its trials' logs are kept {kept}.")


@click.group("label", cls=AliasedGroup, aliases={"rm": "remove"})
def label() -> None:
    """Add or remove an experiment's labels.

    Labels are free tags for finding experiments again: `e list --label NAME` lists those that have it."""


@label.command("add")
@click.argument("exp_id", type=int)
@click.argument("name")
@click.pass_context
def label_add(ctx: click.Context, exp_id: int, name: str) -> None:
    """Tag an experiment with a label, keeping its others.

    Label NAME is added to experiment EXP_ID's labels (nothing changes if it has it already); the labels it has
    are printed. `e list --label NAME` finds it by it."""
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
    """Take a label off an experiment, keeping its others.

    Label NAME is removed from experiment EXP_ID's labels; an experiment without it is an error that lists the
    labels it has."""
    client = client_of(ctx)
    labels = client.get_experiment(exp_id).experiment.labels
    if name not in labels:
        has = f"its labels are {', '.join(map(repr, labels))}" if labels else "it has no labels"
        raise NotFoundError(f"experiment {exp_id} has no label {name!r} ({has})")
    labels = client.patch_experiment(exp_id, labels=[lb for lb in labels if lb != name]).experiment.labels
    output.console.print(f"Removed label {name!r} from experiment {exp_id}; labels: {', '.join(labels) or 'none'}.")
