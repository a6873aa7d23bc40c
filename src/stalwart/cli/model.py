"""`stalwart model|m ...`: the model registry (Determined's `det model`): create, list, describe, update, archive,
unarchive, move and delete models; register-version and list-versions of one. Models are named on the command line by
their name (or their id)."""

from __future__ import annotations

import json
from typing import Any

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.registry import Model, ModelList, ModelVersion, ModelVersionList
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options

MODEL_COLUMNS = ["ID", "Name", "Workspace", "State", "Versions", "Labels", "Description", "Owner", "Updated"]
VERSION_COLUMNS = ["Version", "Name", "Checkpoint", "Experiment", "Trial", "Steps", "Registered", "By", "Comment"]


@click.group("model", cls=AliasedGroup, aliases={"ls": "list", "rm": "delete"})
def model() -> None:
    """Keep trained models and their versions in the registry.

    A model (name, description, labels, metadata, notes) belongs to a workspace; each of its versions points at
    one checkpoint of an experiment, which is then never garbage-collected. Models are named on the command line
    by name. `m` is short for `model`."""


def metadata_of(given: tuple[str, ...]) -> dict[str, Any] | None:
    """--metadata values as one mapping: each a JSON object, or KEY=VALUE (VALUE read as JSON when it is, else
    as text); none given: None."""
    if not given:
        return None
    merged: dict[str, Any] = {}
    for item in given:
        if item.lstrip().startswith("{"):
            try:
                data = json.loads(item)
            except json.JSONDecodeError as err:
                raise InvalidRequest(f"--metadata {item[:60]!r} is not a JSON object: {err.msg}") from None
            if not isinstance(data, dict):
                raise InvalidRequest(f"--metadata {item[:60]!r} must be a JSON object or KEY=VALUE")
            merged.update(data)
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InvalidRequest(f"--metadata {item[:60]!r}: expected KEY=VALUE or a JSON object such as "
                                 "'{\"framework\": \"torch\"}'")
        try:
            merged[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            merged[key.strip()] = value
    return merged


def state_of(m: Model) -> str:
    return "archived" if m.archived else "active"


def model_rows(models: list[Model]) -> list[tuple[Any, ...]]:
    return [(m.id, m.name, m.workspace, state_of(m), m.num_versions, ", ".join(m.labels), m.description, m.username,
             output.when(m.last_updated_time)) for m in models]


def version_rows(versions: list[ModelVersion]) -> list[tuple[Any, ...]]:
    return [(v.version, v.name, v.checkpoint.uuid, v.experiment_id, v.trial_id, v.checkpoint.steps_completed,
             output.when(v.creation_time), v.username, v.comment) for v in versions]


def print_model(m: Model) -> None:
    """One model as a two-column table of its fields."""
    output.table(["Field", "Value"], [
        ("ID", m.id), ("Name", m.name), ("Workspace", f"{m.workspace} (id {m.workspace_id})"), ("State", state_of(m)),
        ("Description", m.description), ("Labels", ", ".join(m.labels)),
        ("Metadata", json.dumps(m.metadata, sort_keys=True) if m.metadata else ""), ("Notes", m.notes),
        ("Owner", m.username), ("Created", output.when(m.creation_time)),
        ("Updated", output.when(m.last_updated_time)), ("Versions", m.num_versions)])


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
metadata_option = click.option(
    "--metadata", multiple=True, metavar="KEY=VALUE|JSON",
    help="Metadata: KEY=VALUE (VALUE read as JSON when it is one) or a JSON object; repeat for more keys.")


@model.command("create")
@click.argument("name")
@click.option("--description", default=None, help="What the model is.")
@click.option("--label", "labels", multiple=True, help="A label; repeat for more.")
@metadata_option
@click.option("--notes", default=None, help="Notes (Markdown).")
@click.option("--workspace", "-w", default=None, help="The workspace it belongs to (default: Uncategorized).")
@json_option
@click.pass_context
def create(ctx: click.Context, name: str, description: str | None, labels: tuple[str, ...], metadata: tuple[str, ...],
           notes: str | None, workspace: str | None, as_json: bool) -> None:
    """Create a model in the registry.

    Model NAME (unique on the cluster) starts with no versions: `register-version NAME UUID` adds them. It belongs
    to --workspace (by name; default Uncategorized), whose roles say who may see and change it."""
    made = client_of(ctx).create_model(name, description=description, labels=list(labels) or None,
                                       metadata=metadata_of(metadata), notes=notes, workspace=workspace)
    if as_json:
        output.print_json(made)
        return
    output.console.print(f"Created model {made.name} (id {made.id}) in workspace {made.workspace}.")


@model.command("list")
@click.option("--workspace", "-w", default=None, help="Only the models of this workspace.")
@click.option("--archived", is_flag=True, help="Also the archived models.")
@format_options
@click.pass_context
def list_(ctx: click.Context, workspace: str | None, archived: bool, fmt: output.Format) -> None:
    """List the models you may see.

    A row per model: id, name, workspace, state (active or archived), number of versions, labels, description,
    owner and when it last changed. Archived models only with --archived."""
    client = client_of(ctx)
    ws_id = client.workspace_by_name(workspace).id if workspace is not None else None
    shown = [m for m in client.list_models(workspace_id=ws_id) if archived or not m.archived]
    shown.sort(key=lambda m: m.name.lower())
    output.emit(fmt, MODEL_COLUMNS, model_rows(shown), json_data=ModelList(models=shown))


@model.command("describe")
@click.argument("name")
@format_options
@click.pass_context
def describe(ctx: click.Context, name: str, fmt: output.Format) -> None:
    """Show a model and its versions.

    Model NAME's fields (description, labels, metadata, notes, workspace), then a row per version: its number,
    name, checkpoint and the experiment and trial the checkpoint came from."""
    client = client_of(ctx)
    found = client.get_model(name)
    versions = client.list_model_versions(found.id)
    if fmt is output.Format.JSON:
        output.print_json({"model": found.model_dump(mode="json", exclude_unset=True),
                           "model_versions": [v.model_dump(mode="json", exclude_unset=True) for v in versions]})
        return
    if fmt is output.Format.CSV:
        output.emit(fmt, VERSION_COLUMNS, version_rows(versions))
        return
    print_model(found)
    output.emit(fmt, VERSION_COLUMNS, version_rows(versions), title="Versions")


@model.command("register-version")
@click.argument("name")
@click.argument("checkpoint_uuid")
@click.option("--name", "version_name", default=None, help="A name for the version.")
@click.option("--comment", default=None, help="A comment on the version.")
@click.option("--label", "labels", multiple=True, help="A label of the version; repeat for more.")
@metadata_option
@click.option("--notes", default=None, help="Notes on the version (Markdown).")
@json_option
@click.pass_context
def register_version(ctx: click.Context, name: str, checkpoint_uuid: str, version_name: str | None,
                     comment: str | None, labels: tuple[str, ...], metadata: tuple[str, ...], notes: str | None,
                     as_json: bool) -> None:
    """Register a checkpoint as a model's next version.

    CHECKPOINT_UUID (a COMPLETED checkpoint of an experiment you may see; `e list-checkpoints` names them) becomes
    version 1, 2, ... of model NAME. A registered checkpoint is never garbage-collected."""
    made = client_of(ctx).register_version(name, checkpoint_uuid, name=version_name, comment=comment,
                                           labels=list(labels) or None, metadata=metadata_of(metadata), notes=notes)
    if as_json:
        output.print_json(made)
        return
    output.console.print(f"Registered checkpoint {made.checkpoint.uuid} as version {made.version} of model "
                         f"{made.model_name}.")


@model.command("list-versions")
@click.argument("name")
@format_options
@click.pass_context
def list_versions(ctx: click.Context, name: str, fmt: output.Format) -> None:
    """List a model's versions.

    A row per version of model NAME, oldest first: its number, name, checkpoint, the experiment, trial and steps
    the checkpoint came from, when and by whom it was registered, its comment."""
    versions = sorted(client_of(ctx).list_model_versions(name), key=lambda v: v.version)
    output.emit(fmt, VERSION_COLUMNS, version_rows(versions), json_data=ModelVersionList(model_versions=versions))


@model.command("update")
@click.argument("name")
@click.option("--name", "new_name", default=None, help="Its new name.")
@click.option("--description", default=None, help="Its new description.")
@click.option("--label", "labels", multiple=True, help="Its labels (replacing the ones it has); repeat for more.")
@click.option("--clear-labels", is_flag=True, help="Remove all its labels.")
@metadata_option
@click.option("--remove-metadata", "remove_keys", multiple=True, metavar="KEY", help="Remove this metadata key.")
@click.option("--notes", default=None, help="Its new notes (Markdown).")
@click.pass_context
def update(ctx: click.Context, name: str, new_name: str | None, description: str | None, labels: tuple[str, ...],
           clear_labels: bool, metadata: tuple[str, ...], remove_keys: tuple[str, ...], notes: str | None) -> None:
    """Change a model's name, description, labels or notes.

    Only what is given changes, its metadata too. --label replaces its labels; --metadata adds keys (or
    replaces them), and --remove-metadata removes keys, leaving the others."""
    if labels and clear_labels:
        raise InvalidRequest("give --label or --clear-labels, not both")
    added = metadata_of(metadata)
    changes: dict[str, Any] = {"name": new_name, "description": description, "notes": notes,
                               "labels": [] if clear_labels else (list(labels) or None)}
    if all(v is None for v in changes.values()) and added is None and not remove_keys:
        raise InvalidRequest("nothing to change: give --name, --description, --label, --clear-labels, --metadata, "
                             "--remove-metadata or --notes")
    client = client_of(ctx)
    found = client.get_model(name)
    if added is not None or remove_keys:
        missing = [k for k in remove_keys if k not in found.metadata]
        if missing:
            raise InvalidRequest(f"model {found.name} has no metadata key(s) {', '.join(missing)} "
                                 f"(its keys: {', '.join(sorted(found.metadata)) or 'none'})")
        kept = {k: v for k, v in found.metadata.items() if k not in remove_keys}
        changes["metadata"] = {**kept, **(added or {})}
    changed = client.edit_model(found.id, **changes)
    output.console.print(f"Model {changed.name} (id {changed.id}) changed.")


@model.command("move")
@click.argument("name")
@click.argument("workspace_name")
@click.pass_context
def move(ctx: click.Context, name: str, workspace_name: str) -> None:
    """Move a model and its versions to another workspace.

    Model NAME then belongs to WORKSPACE_NAME, whose roles say who may see and change it (moving needs
    create_model_registry there)."""
    client = client_of(ctx)
    moved = client.edit_model(name, workspace_id=client.workspace_by_name(workspace_name).id)
    output.console.print(f"Moved model {moved.name} to workspace {moved.workspace}.")


@model.command("archive")
@click.argument("name")
@click.pass_context
def archive(ctx: click.Context, name: str) -> None:
    """Archive a model: no new versions, hidden from `list`.

    Model NAME keeps its versions (and their checkpoints stay protected from GC); `unarchive` opens it again."""
    done = client_of(ctx).archive_model(name)
    output.console.print(f"Archived model {done.name}.")


@model.command("unarchive")
@click.argument("name")
@click.pass_context
def unarchive(ctx: click.Context, name: str) -> None:
    """Unarchive a model: it takes new versions again.

    The opposite of `archive`: model NAME is listed by `list` again and takes new versions."""
    done = client_of(ctx).unarchive_model(name)
    output.console.print(f"Unarchived model {done.name}.")


@model.command("delete")
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx: click.Context, name: str, yes: bool) -> None:
    """Delete a model and its versions for good.

    The checkpoints its versions point at stay, back under their experiments' GC policies. It asks first unless
    --yes. `archive` only hides a model."""
    client = client_of(ctx)
    found = client.get_model(name)
    versions = f" and its {found.num_versions} version(s)" if found.num_versions else ""
    if not yes and not click.confirm(f"Delete model {found.name}{versions}?", default=False, err=True):
        output.console.print(f"Kept model {found.name}.")
        return
    client.delete_model(found.id)
    output.console.print(f"Deleted model {found.name}.")
