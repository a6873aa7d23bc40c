"""`stalwart notebook|nb start|list|describe|logs|open|kill`: JupyterLab notebooks on the cluster, through the
master."""

from __future__ import annotations

import click

from stalwart.api.models.tasks import Command
from stalwart.cli import output, queued, task_kinds
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.cli.follow import follow_task_logs
from stalwart.client import Client

READY_TIMEOUT_S = 300.0
"""How long `start` and `open` wait for JupyterLab to answer before they give up waiting (the notebook goes on)."""


@click.group("notebook", cls=AliasedGroup, aliases={"ls": "list"})
def notebook() -> None:
    """JupyterLab notebooks on the cluster, through the master.

    A notebook is a task: it waits in the job queue for its slots (resources.slots, 1 by default; 0 runs it on
    the aux pool without a GPU), then serves JupyterLab at MASTER/proxy/notebook-ID/lab, to its owner alone. It
    stops itself after its idle_timeout (else the master's notebook_timeout) without use, as its
    notebook_idle_type says: kernels_or_terminals (default), kernel_connections or activity. `nb` is short for
    `notebook`."""


def _url(client: Client, nb: Command) -> str:
    return client.url.rstrip("/") + (nb.proxy_path or f"/proxy/notebook-{nb.id}/") + "lab"



def _served(client: Client, notebook_id: int, timeout: float) -> Command:
    return task_kinds.wait_until_served(lambda: client.get_notebook(notebook_id).notebook, f"notebook {notebook_id}",
                                        "notebook", timeout)


def _open(client: Client, nb: Command, *, browser: bool) -> None:
    task_kinds.show_address(f"Notebook {nb.id}", _url(client, nb), browser=browser)





@notebook.command("start")
@click.option("--config-file", default=None, help="YAML file with the notebook's config (resources, idle_timeout).")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VAL", help="Override a config key (dotted path).")
@click.option("-c", "--context", "context_dir", default=None, help="Directory shipped as the notebook's directory.")
@click.option("--template", default=None, metavar="NAME",
              help="A configuration template the master merges under the config (`stalwart template list`).")
@click.option("-d", "--detach", is_flag=True, help="Print the id and return instead of waiting and opening it.")
@click.option("--no-browser", is_flag=True, help="Print the address but do not open a browser.")
@click.pass_context
def start(ctx: click.Context, config_file: str | None, overrides: tuple[str, ...], context_dir: str | None,
          template: str | None, detach: bool, no_browser: bool) -> None:
    """Start a JupyterLab notebook on the cluster.

    Its files are a copy of --context's directory (if given). Without --detach it says why while the notebook
    waits in the queue, then waits until JupyterLab answers, prints its address (MASTER/proxy/notebook-ID/lab;
    sign in to the master's web UI to open it) and opens it in your browser when there is a display; with
    --detach it prints the id and returns (`notebook open ID` later)."""
    config = task_kinds.config_of(config_file, overrides)
    client = client_of(ctx)
    made = client.create_notebook(config, task_kinds.context_of(context_dir), template=template)
    nb = made.notebook
    output.console.print(f"Launched notebook {nb.id} ({nb.description}) in pool {nb.resource_pool}.")
    for warning in made.warnings:
        output.warn(warning)
    if detach:
        return
    queued.wait_while_queued(client, "COMMAND", nb.id, f"Notebook {nb.id}",
                             hint=f"(`stalwart notebook kill {nb.id}` cancels it.)")
    _open(client, _served(client, nb.id, READY_TIMEOUT_S), browser=not no_browser)


@notebook.command("open")
@click.argument("notebook_id", type=int)
@click.option("--timeout", type=float, default=READY_TIMEOUT_S, show_default=True,
              help="Seconds to wait for JupyterLab to answer.")
@click.option("--no-browser", is_flag=True, help="Print the address but do not open a browser.")
@click.pass_context
def open_(ctx: click.Context, notebook_id: int, timeout: float, no_browser: bool) -> None:
    """Wait until a notebook serves, print its address, open it.

    It opens in your browser when there is a display. The address is the master's (MASTER/proxy/notebook-ID/lab);
    only the notebook's owner, signed in to the master's web UI, opens it. No token is printed: the master passes
    the notebook's own token on. Without an answer within --timeout seconds it says so and the notebook goes on."""
    client = client_of(ctx)
    _open(client, _served(client, notebook_id, timeout), browser=not no_browser)


@notebook.command("list")
@click.option("-a", "--all", "show_all", is_flag=True, help="Include notebooks that have ended.")
@format_options
@click.pass_context
def list_(ctx: click.Context, show_all: bool, fmt: output.Format) -> None:
    """List the notebooks that run or wait, with their address.

    With --all also those that ended, and why (killed by whom, idle for longer than its idle_timeout)."""
    data = client_of(ctx).list_notebooks(include_ended=show_all)
    output.emit(fmt, ["ID", "Description", "State", "Owner", "Workspace", "Pool", "Address", "Created", "Ended",
                      "Note"],
                [(n.id, n.description, n.state, n.owner, n.workspace, n.resource_pool,
                  f"{n.proxy_path}lab" if n.proxy_path else "", output.when(n.created_at), output.when(n.ended_at),
                  n.end_reason or n.pending_reason or "") for n in data.notebooks],
                json_data=data)


@notebook.command("describe")
@click.argument("notebook_id", type=int)
@format_options
@click.pass_context
def describe(ctx: click.Context, notebook_id: int, fmt: output.Format) -> None:
    """Show one notebook: its state, place and address.

    Its owner, workspace, project and pool, slots, idle settings (notebook_idle_type, idle_timeout), why it ended
    or still waits. It changes nothing."""
    nb = client_of(ctx).get_notebook(notebook_id).notebook
    config = nb.config or {}
    rows = [("ID", nb.id), ("Description", nb.description), ("State", nb.state), ("Result", nb.result),
            ("Owner", nb.owner), ("Workspace", nb.workspace), ("Project", nb.project), ("Pool", nb.resource_pool),
            ("Slots", (config.get("resources") or {}).get("slots")), ("Idle type", config.get("notebook_idle_type")),
            ("Idle timeout", config.get("idle_timeout") or "the master's notebook_timeout"),
            ("Address", f"{nb.proxy_path}lab" if nb.proxy_path else ""), ("Created", output.when(nb.created_at)),
            ("Ended", output.when(nb.ended_at)), ("Note", nb.end_reason or nb.pending_reason or "")]
    output.emit(fmt, ["Field", "Value"], rows, json_data=nb)


@notebook.command("logs")
@click.argument("notebook_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the notebook ends.")
@click.pass_context
def logs(ctx: click.Context, notebook_id: int, follow: bool) -> None:
    """Print a notebook's output so far (JupyterLab's own lines). It changes nothing."""
    client = client_of(ctx)
    client.get_notebook(notebook_id)  # 404 for what is no notebook
    follow_task_logs(client, notebook_id, follow)


@notebook.command("kill")
@click.argument("notebook_ids", type=int, nargs=-1, required=True)
@click.pass_context
def kill(ctx: click.Context, notebook_ids: tuple[int, ...]) -> None:
    """Stop notebooks at once; a queued one never starts.

    JupyterLab and its kernels are stopped: unsaved work in them is lost. One that has already ended is
    refused."""
    client = client_of(ctx)
    for notebook_id in notebook_ids:
        client.kill_notebook(notebook_id)
        output.console.print(f"Killed notebook {notebook_id}.")
