"""`stalwart project|p ...`: projects inside a workspace (create, list, describe, edit, archive, unarchive, delete,
list-experiments), each named by its workspace's name and its own."""

from __future__ import annotations

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.workspaces import ProjectList
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.cli.experiment import list_ as experiment_list
from stalwart.cli.workspace import PROJECT_COLUMNS, project_rows


@click.group("project", cls=AliasedGroup, aliases={"ls": "list"})
def project() -> None:
    """Create, change and delete projects in a workspace.

    A project groups experiments and commands inside a workspace; each is named by its workspace's name and its
    own, and the roles given on its workspace apply to everything in it. A config's `workspace:` and `project:`
    keys put new work into one. `p` is short for `project`."""


@project.command("create")
@click.argument("workspace_name")
@click.argument("name")
@click.option("--description", default=None, help="What the project is for.")
@click.option("--key", default=None, help="A short key (letters and digits).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_context
def create(ctx: click.Context, workspace_name: str, name: str, description: str | None, key: str | None,
           as_json: bool) -> None:
    """Create a project to hold experiments in a workspace.

    Project NAME goes into workspace WORKSPACE_NAME (not an archived one); names are unique within a workspace.
    Experiments and commands go into it when their config names it, and `e move` moves an experiment in."""
    client = client_of(ctx)
    made = client.create_project(client.workspace_by_name(workspace_name).id, name, description=description, key=key)
    if as_json:
        output.print_json(made)
        return
    output.console.print(f"Created project {made.name} (id {made.id}) in workspace {made.workspaceName}.")


@project.command("list")
@click.argument("workspace_name")
@format_options
@click.pass_context
def list_(ctx: click.Context, workspace_name: str, fmt: output.Format) -> None:
    """List a workspace's projects and their experiment counts.

    A row per project of workspace WORKSPACE_NAME, archived ones too: id, name, state, experiments, key and
    description. `workspace list-projects NAME` is the same list."""
    client = client_of(ctx)
    projects = client.list_projects(client.workspace_by_name(workspace_name).id)
    output.emit(fmt, PROJECT_COLUMNS, project_rows(projects), json_data=ProjectList(projects=projects))


@project.command("describe")
@click.argument("workspace_name")
@click.argument("name")
@format_options
@click.pass_context
def describe(ctx: click.Context, workspace_name: str, name: str, fmt: output.Format) -> None:
    """Show one project's state, key and experiment count.

    Project NAME of workspace WORKSPACE_NAME, as a row of `list` shows it; `list-experiments` lists what it
    holds."""
    found = client_of(ctx).project_by_name(workspace_name, name)
    if fmt is output.Format.JSON:
        output.print_json(found)
        return
    output.emit(fmt, PROJECT_COLUMNS, project_rows([found]))


@project.command("list-experiments")
@click.argument("workspace_name")
@click.argument("name")
@click.option("-a", "--all", "include_archived", is_flag=True, help="Archived experiments too.")
@format_options
@click.pass_context
def list_experiments(ctx: click.Context, workspace_name: str, name: str, include_archived: bool,
                     fmt: output.Format) -> None:
    """List the experiments a project holds.

    The experiments of project NAME in workspace WORKSPACE_NAME, newest first (archived ones only with --all), as
    `e list --workspace WORKSPACE_NAME --project NAME` lists them."""
    ctx.invoke(experiment_list, workspace=workspace_name, project=name, include_archived=include_archived,
               as_json=fmt is output.Format.JSON, as_csv=fmt is output.Format.CSV)


@project.command("edit")
@click.argument("workspace_name")
@click.argument("name")
@click.option("--name", "new_name", default=None, help="Its new name.")
@click.option("--description", default=None, help="Its new description.")
@click.option("--key", default=None, help="Its new key.")
@click.pass_context
def edit(ctx: click.Context, workspace_name: str, name: str, new_name: str | None, description: str | None,
         key: str | None) -> None:
    """Rename a project or change its description or key.

    Only what is given changes in project NAME of workspace WORKSPACE_NAME; its experiments stay in it. The
    Uncategorized project cannot be renamed."""
    if new_name is None and description is None and key is None:
        raise InvalidRequest("nothing to change: give --name, --description or --key")
    client = client_of(ctx)
    found = client.project_by_name(workspace_name, name)
    changed = client.edit_project(found.id, name=new_name, description=description, key=key)
    output.console.print(f"Project {changed.name} (id {changed.id}) of workspace {changed.workspaceName} changed.")


@project.command("archive")
@click.argument("workspace_name")
@click.argument("name")
@click.pass_context
def archive(ctx: click.Context, workspace_name: str, name: str) -> None:
    """Close a project to new experiments and commands.

    Project NAME of workspace WORKSPACE_NAME then takes no new work (and no moved experiment); what runs in it
    goes on, and nothing is deleted. `unarchive` opens it again; `delete` removes an empty one."""
    client = client_of(ctx)
    done = client.archive_project(client.project_by_name(workspace_name, name).id)
    output.console.print(f"Archived project {done.name} of workspace {done.workspaceName}.")


@project.command("unarchive")
@click.argument("workspace_name")
@click.argument("name")
@click.pass_context
def unarchive(ctx: click.Context, workspace_name: str, name: str) -> None:
    """Open an archived project to new work again.

    The opposite of `archive`: project NAME of workspace WORKSPACE_NAME takes new experiments and commands
    again (unless its workspace is archived)."""
    client = client_of(ctx)
    done = client.unarchive_project(client.project_by_name(workspace_name, name).id)
    output.console.print(f"Unarchived project {done.name} of workspace {done.workspaceName}.")


@project.command("delete")
@click.argument("workspace_name")
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx: click.Context, workspace_name: str, name: str, yes: bool) -> None:
    """Delete an empty project for good.

    Project NAME of workspace WORKSPACE_NAME goes; it is refused while the project holds experiments or commands
    (`e move` moves experiments out). It asks first unless --yes. `archive` only closes a project."""
    client = client_of(ctx)
    found = client.project_by_name(workspace_name, name)
    if not yes and not click.confirm(f"Delete project {name} of workspace {workspace_name}?", default=False,
                                     err=True):
        output.console.print(f"Kept project {name}.")
        return
    client.delete_project(found.id)
    output.console.print(f"Deleted project {name} of workspace {workspace_name}.")
