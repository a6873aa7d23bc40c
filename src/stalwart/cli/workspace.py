"""`stalwart workspace|w ...`: workspaces (create, list, describe, edit, archive, unarchive, delete) and the
projects in one (list-projects). Workspaces are named on the command line; the client finds their ids."""

from __future__ import annotations

import pathlib
from typing import Any

import click
import yaml

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.workspaces import Project, ProjectList, Workspace, WorkspaceList
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, Callback, client_of, format_options


@click.group("workspace", cls=AliasedGroup, aliases={"ls": "list"})
def workspace() -> None:
    """Create, change and delete workspaces.

    A workspace holds projects, which hold experiments and commands. Roles given on a workspace apply to all of
    it, and its settings (default pools, checkpoint storage, the OS user its tasks run as) to the work in it.
    Workspaces are named on the command line. `w` is short for `workspace`."""


def agent_options(func: Callback) -> Callback:
    """--agent-uid, --agent-gid, --agent-user, --agent-group: the OS user a workspace's tasks run as."""
    for flag, kind, what in (("--agent-group", str, "group name"), ("--agent-gid", int, "group id"),
                             ("--agent-user", str, "user name"), ("--agent-uid", int, "user id")):
        func = click.option(flag, type=kind, default=None,
                            help=f"The OS {what} the workspace's tasks run as on agents that run as root "
                                 f"(give all four --agent-* options).")(func)
    return func


def agent_user_group(uid: int | None, gid: int | None, user: str | None, group: str | None) -> dict[str, Any] | None:
    """The four --agent-* values as the API's agentUserGroup; none given: None; some: a clear error."""
    given = {"agentUid": uid, "agentGid": gid, "agentUser": user, "agentGroup": group}
    if all(v is None for v in given.values()):
        return None
    missing = [f"--agent-{k[5:].lower()}" for k, v in given.items() if v is None]
    if missing:
        raise InvalidRequest(f"the OS user of a workspace needs all four --agent-uid, --agent-gid, --agent-user and "
                             f"--agent-group: {', '.join(missing)} missing")
    return given


def storage_file(path: str | None) -> dict[str, Any] | None:
    """The checkpoint storage config in a YAML or JSON file, as a mapping."""
    if path is None:
        return None
    try:
        data = yaml.safe_load(pathlib.Path(path).expanduser().read_text())
    except OSError as err:
        raise InvalidRequest(f"checkpoint storage config file '{path}' cannot be read: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise InvalidRequest(f"checkpoint storage config file '{path}' is not YAML or JSON: {err}") from None
    if not isinstance(data, dict):
        raise InvalidRequest(f"checkpoint storage config file '{path}' must hold a mapping such as "
                             f"{{type: shared_fs, host_path: /mnt/checkpoints}}")
    return data


def state_of(archived: bool) -> str:
    return "archived" if archived else "active"


def _agent(w: Workspace) -> str:
    a = w.agentUserGroup
    if a is None or a.agentUid is None:
        return ""
    return f"{a.agentUser} ({a.agentUid}) : {a.agentGroup} ({a.agentGid})"


def _workspace_rows(shown: list[Workspace]) -> list[tuple[Any, ...]]:
    return [(w.id, w.name, state_of(w.archived), w.numProjects, w.numExperiments, w.defaultComputePool,
             w.defaultAuxPool, ", ".join(w.boundPools), _agent(w)) for w in shown]


WORKSPACE_COLUMNS = ["ID", "Name", "State", "Projects", "Experiments", "Compute pool", "Aux pool", "Bound pools",
                     "Runs as"]
PROJECT_COLUMNS = ["ID", "Name", "Workspace", "State", "Experiments", "Key", "Description"]


def project_rows(projects: list[Project]) -> list[tuple[Any, ...]]:
    return [(p.id, p.name, p.workspaceName, state_of(p.archived), p.numExperiments, p.key, p.description)
            for p in projects]


@workspace.command("create")
@click.argument("name")
@agent_options
@click.option("--default-compute-pool", default=None, help="The pool its experiments and commands use by default.")
@click.option("--default-aux-pool", default=None, help="The pool its CPU-only tasks use by default.")
@click.option("--checkpoint-storage-config-file", "storage", default=None, metavar="FILE",
              help="A YAML or JSON file with the checkpoint storage its experiments use by default.")
@click.option("--kubernetes-namespace", default=None, metavar="NAMESPACE",
              help="Where its pods go under a Kubernetes resource manager (admins only).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_context
def create(ctx: click.Context, name: str, agent_uid: int | None, agent_gid: int | None, agent_user: str | None,
           agent_group: str | None, default_compute_pool: str | None, default_aux_pool: str | None,
           storage: str | None, kubernetes_namespace: str | None, as_json: bool) -> None:
    """Create a workspace, with its own settings and projects.

    Workspace NAME starts with a project of its own named Uncategorized (`project create NAME PROJECT` adds
    more). Its options set where its
    work runs by default (--default-compute-pool, --default-aux-pool), where its experiments' checkpoints go
    (--checkpoint-storage-config-file), with all four --agent-* options, the OS user its tasks run as on
    agents that run as root, and the Kubernetes namespace its pods go to (--kubernetes-namespace). `edit` changes
    them later."""
    runs_as, checkpoints = agent_user_group(agent_uid, agent_gid, agent_user, agent_group), storage_file(storage)
    made = client_of(ctx).create_workspace(
        name, agent_user_group=runs_as, checkpoint_storage_config=checkpoints,
        default_compute_pool=default_compute_pool, default_aux_pool=default_aux_pool,
        kubernetes_namespace=kubernetes_namespace)
    if as_json:
        output.print_json(made)
        return
    output.console.print(f"Created workspace {made.name} (id {made.id}).")


@workspace.command("list")
@format_options
@click.pass_context
def list_(ctx: click.Context, fmt: output.Format) -> None:
    """List the workspaces with their pools and settings.

    A row per workspace: id, name, state (active or archived), number of projects and experiments, default
    pools, bound pools and the OS user its tasks run as. `describe` shows one with its projects."""
    shown = client_of(ctx).list_workspaces()
    output.emit(fmt, WORKSPACE_COLUMNS, _workspace_rows(shown), json_data=WorkspaceList(workspaces=shown))


@workspace.command("describe")
@click.argument("name")
@format_options
@click.pass_context
def describe(ctx: click.Context, name: str, fmt: output.Format) -> None:
    """Show one workspace's settings and its projects.

    Workspace NAME as a row of `list` shows it, its checkpoint storage, then a row per project."""
    client = client_of(ctx)
    found = client.workspace_by_name(name)
    if fmt is output.Format.JSON:
        output.print_json(found)
        return
    output.emit(fmt, WORKSPACE_COLUMNS, _workspace_rows([found]))
    if found.checkpointStorageConfig and fmt is output.Format.TABLE:
        output.console.print(f"Checkpoint storage: {found.checkpointStorageConfig}")
    if fmt is output.Format.TABLE:
        output.emit(fmt, PROJECT_COLUMNS, project_rows(client.list_projects(found.id)), title="Projects")


@workspace.command("list-projects")
@click.argument("name")
@format_options
@click.pass_context
def list_projects(ctx: click.Context, name: str, fmt: output.Format) -> None:
    """List a workspace's projects and their experiment counts.

    A row per project of workspace NAME, archived ones too; the same list as `project list NAME`."""
    client = client_of(ctx)
    projects = client.list_projects(client.workspace_by_name(name).id)
    output.emit(fmt, PROJECT_COLUMNS, project_rows(projects), json_data=ProjectList(projects=projects))


@workspace.command("edit")
@click.argument("name")
@click.option("--name", "new_name", default=None, help="Its new name.")
@agent_options
@click.option("--default-compute-pool", default=None, help="The pool its experiments and commands use by default.")
@click.option("--default-aux-pool", default=None, help="The pool its CPU-only tasks use by default.")
@click.option("--checkpoint-storage-config-file", "storage", default=None, metavar="FILE",
              help="A YAML or JSON file with the checkpoint storage its experiments use by default.")
@click.option("--kubernetes-namespace", default=None, metavar="NAMESPACE",
              help="Where its pods go under a Kubernetes resource manager (admins only).")
@click.pass_context
def edit(ctx: click.Context, name: str, new_name: str | None, agent_uid: int | None, agent_gid: int | None,
         agent_user: str | None, agent_group: str | None, default_compute_pool: str | None,
         default_aux_pool: str | None, storage: str | None, kubernetes_namespace: str | None) -> None:
    """Rename a workspace or change its settings.

    Only what is given changes: its name, its default pools, its checkpoint storage, its Kubernetes namespace, or
    (all four --agent-* options) the OS user its tasks run as. The Uncategorized workspace cannot be renamed."""
    changes: dict[str, Any] = {
        "name": new_name, "agent_user_group": agent_user_group(agent_uid, agent_gid, agent_user, agent_group),
        "checkpoint_storage_config": storage_file(storage), "default_compute_pool": default_compute_pool,
        "default_aux_pool": default_aux_pool, "kubernetes_namespace": kubernetes_namespace}
    if all(v is None for v in changes.values()):
        raise InvalidRequest("nothing to change: give --name, the --agent-* options, --default-compute-pool, "
                             "--default-aux-pool, --checkpoint-storage-config-file or --kubernetes-namespace")
    client = client_of(ctx)
    changed = client.edit_workspace(client.workspace_by_name(name).id, **changes)
    output.console.print(f"Workspace {changed.name} (id {changed.id}) changed.")


@workspace.command("archive")
@click.argument("name")
@click.pass_context
def archive(ctx: click.Context, name: str) -> None:
    """Close a workspace and its projects to new work.

    Workspace NAME and its projects then take no new experiments, commands or projects; what runs in them goes
    on, and nothing is deleted. `unarchive` opens it again; `delete` removes an empty one."""
    client = client_of(ctx)
    done = client.archive_workspace(client.workspace_by_name(name).id)
    output.console.print(f"Archived workspace {done.name}.")


@workspace.command("unarchive")
@click.argument("name")
@click.pass_context
def unarchive(ctx: click.Context, name: str) -> None:
    """Open an archived workspace to new work again.

    The opposite of `archive`: workspace NAME and its projects (those not archived themselves) take new
    experiments, commands and projects again."""
    client = client_of(ctx)
    done = client.unarchive_workspace(client.workspace_by_name(name).id)
    output.console.print(f"Unarchived workspace {done.name}.")


@workspace.command("delete")
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx: click.Context, name: str, yes: bool) -> None:
    """Delete an empty workspace and its projects for good.

    Workspace NAME goes with its projects; it is refused while they hold experiments or commands. It asks first
    unless --yes. `archive` only closes a workspace."""
    client = client_of(ctx)
    found = client.workspace_by_name(name)
    if not yes and not click.confirm(f"Delete workspace {name} and its projects?", default=False, err=True):
        output.console.print(f"Kept workspace {name}.")
        return
    client.delete_workspace(found.id)
    output.console.print(f"Deleted workspace {name}.")
