"""`stalwart template set|create|list|describe|remove` (alias `tpl`): configuration templates, named configs merged
under an experiment's or command's own config when it is created with `--template NAME` (docs/templates.md)."""

from __future__ import annotations

import sys

import click
import yaml

from stalwart.api.errors import NotFoundError
from stalwart.api.models.templates import Template
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.cli.config_file import read_config_mapping


@click.group("template", cls=AliasedGroup, aliases={"ls": "list", "rm": "remove"})
def template() -> None:
    """Set, list, describe and remove configuration templates.

    A template is a named config (YAML) in a workspace. `experiment create --template NAME` and `cmd run
    --template NAME` merge it under their own config when they are created: their own values win, maps merge key
    by key, a list replaces the template's (bind_mounts, devices and environment variables are added to it). The
    merged config is what the experiment or command keeps: changing the template later changes neither. Secrets in
    a template (storage keys, registry passwords) are shown hidden. Reading and using one needs view_templates on
    its workspace; setting or removing one needs edit_templates (Editor) there."""


def _print(made: Template, verb: str) -> None:
    output.console.print(f"{verb} template {made.name} in workspace {made.workspace or made.workspace_id}.")


@template.command("set")
@click.argument("name")
@click.argument("config_file", metavar="FILE")
@click.option("-w", "--workspace", default=None, help="Its workspace (default: its own; a new one: Uncategorized).")
@click.pass_context
def set_(ctx: click.Context, name: str, config_file: str, workspace: str | None) -> None:
    """Set template NAME to FILE's config (creating it if new).

    Creates the template when there is none of that name. A secret shown hidden ('********', as `describe`
    prints it) keeps the template's stored value. What was created with the template before keeps the config it
    was created with."""
    config = read_config_mapping(config_file)
    client = client_of(ctx)
    try:
        made = client.replace_template(name, config, workspace=workspace)
        verb = "Set"
    except NotFoundError:
        made = client.create_template(name, config, workspace=workspace)
        verb = "Created"
    _print(made, verb)


@template.command("create")
@click.argument("name")
@click.argument("config_file", metavar="FILE")
@click.option("-w", "--workspace", default=None, help="Its workspace (default: Uncategorized).")
@click.pass_context
def create(ctx: click.Context, name: str, config_file: str, workspace: str | None) -> None:
    """Create template NAME from the config in FILE.

    Refused when NAME is taken (`set` replaces one)."""
    _print(client_of(ctx).create_template(name, read_config_mapping(config_file), workspace=workspace), "Created")


@template.command("list")
@click.option("-d", "--details", is_flag=True, help="Also print each template's config (secrets hidden).")
@format_options
@click.pass_context
def list_(ctx: click.Context, details: bool, fmt: output.Format) -> None:
    """List the templates you may view, by name."""
    found = client_of(ctx).list_templates()
    columns = ["Name", "Workspace", "Owner", "Updated"] + (["Config"] if details else [])
    rows = [(t.name, t.workspace or t.workspace_id, t.owner, output.when(t.updated_at),
             *([yaml.safe_dump(t.config, sort_keys=False).rstrip()] if details else [])) for t in found]
    output.emit(fmt, columns, rows, json_data={"templates": [t.model_dump(mode="json") for t in found]})


@template.command("describe")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the template as JSON.")
@click.pass_context
def describe(ctx: click.Context, name: str, as_json: bool) -> None:
    """Print template NAME's config as YAML (secrets hidden).

    The output is ready for `template set`: a hidden secret set again keeps its stored value."""
    found = client_of(ctx).get_template(name)
    if as_json:
        output.print_json(found)
        return
    sys.stdout.write(yaml.safe_dump(found.config, sort_keys=False, default_flow_style=False))


@template.command("remove")
@click.argument("name")
@click.pass_context
def remove(ctx: click.Context, name: str) -> None:
    """Remove template NAME; what was created with it keeps its config."""
    client_of(ctx).delete_template(name)
    output.console.print(f"Removed template {name}.")
