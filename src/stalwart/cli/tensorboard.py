"""`stalwart tensorboard|tb start|list|describe|logs|open|kill`: TensorBoards of experiments' and trials' metrics."""

from __future__ import annotations

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.tasks import Command
from stalwart.cli import output, queued, task_kinds
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.cli.follow import follow_task_logs
from stalwart.client import Client

READY_TIMEOUT_S = 300.0
"""How long `start` waits for the TensorBoard to answer before it gives up waiting (the task goes on)."""


@click.group("tensorboard", cls=AliasedGroup, aliases={"ls": "list"})
def tensorboard() -> None:
    """TensorBoards of experiments' metrics, through the master.

    A TensorBoard is a task (no slots by default) that brings the event files the trials wrote to their
    experiment's checkpoint storage and serves them at MASTER/proxy/tensorboard-ID/, to whoever may view every
    experiment it shows. It stops itself after the master's tensorboard_timeout (5 minutes) without a visit, or its
    config's idle_timeout. `tb` is short for `tensorboard`."""


def _url(client: Client, tb: Command) -> str:
    return client.url.rstrip("/") + (tb.proxy_path or f"/proxy/tensorboard-{tb.id}/")


def _served(client: Client, tb_id: int, timeout: float = READY_TIMEOUT_S) -> Command:
    return task_kinds.wait_until_served(lambda: client.get_tensorboard(tb_id).tensorboard, f"TensorBoard {tb_id}",
                                        "tensorboard", timeout)


@tensorboard.command("start")
@click.argument("experiment_ids", type=int, nargs=-1)
@click.option("-t", "--trial-id", "trial_ids", type=int, multiple=True,
              help="Show this trial (repeatable) instead of whole experiments.")
@click.option("--config-file", default=None, help="YAML file with the task's config (resources, idle_timeout).")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VAL", help="Override a config key (dotted path).")
@click.option("--template", default=None, metavar="NAME",
              help="A configuration template the master merges under the config (`stalwart template list`).")
@click.option("-d", "--detach", is_flag=True, help="Print the id and return instead of waiting and opening it.")
@click.option("--no-browser", is_flag=True, help="Print the address but do not open a browser.")
@click.pass_context
def start(ctx: click.Context, experiment_ids: tuple[int, ...], trial_ids: tuple[int, ...], config_file: str | None,
          overrides: tuple[str, ...], template: str | None, detach: bool, no_browser: bool) -> None:
    """Serve experiments' or trials' metrics in a new TensorBoard task.

    It shows every trial of each EXPERIMENT_ID, or only the trials given with -t. You must be allowed to view
    every experiment it shows. Without --detach it waits until the TensorBoard answers, prints its address and
    opens it in your browser; with --detach it prints the id and returns (`tensorboard open ID` opens it later)."""
    if bool(experiment_ids) == bool(trial_ids):
        raise InvalidRequest("give experiment ids (`stalwart tensorboard start 3 4`) or trial ids "
                             "(`stalwart tensorboard start -t 7 -t 8`), not both")
    config = task_kinds.config_of(config_file, overrides)
    client = client_of(ctx)
    tb = client.create_tensorboard(experiment_ids=list(experiment_ids), trial_ids=list(trial_ids),
                                   config=config, template=template).tensorboard
    output.console.print(f"Launched TensorBoard {tb.id} ({tb.description}).")
    if detach:
        return
    queued.wait_while_queued(client, "COMMAND", tb.id, f"TensorBoard {tb.id}",
                             hint=f"(`stalwart tensorboard kill {tb.id}` cancels it.)")
    _open(client, _served(client, tb.id), browser=not no_browser)


def _open(client: Client, tb: Command, *, browser: bool) -> None:
    task_kinds.show_address(f"TensorBoard {tb.id}", _url(client, tb), browser=browser)


@tensorboard.command("open")
@click.argument("tensorboard_id", type=int)
@click.option("--no-browser", is_flag=True, help="Print the address but do not open a browser.")
@click.pass_context
def open_(ctx: click.Context, tensorboard_id: int, no_browser: bool) -> None:
    """Open a running TensorBoard in your browser.

    It prints its address too (with --no-browser, only that). It changes nothing."""
    client = client_of(ctx)
    _open(client, _served(client, tensorboard_id, timeout=0), browser=not no_browser)


@tensorboard.command("list")
@click.option("-a", "--all", "show_all", is_flag=True, help="Include TensorBoards that have ended.")
@format_options
@click.pass_context
def list_(ctx: click.Context, show_all: bool, fmt: output.Format) -> None:
    """List running TensorBoards with their state and address.

    With --all, also those that ended, with why. It changes nothing."""
    data = client_of(ctx).list_tensorboards(include_ended=show_all)
    output.emit(fmt, ["ID", "Description", "State", "Owner", "Workspace", "Address", "Created", "Ended", "Note"],
                [(t.id, t.description, t.state, t.owner, t.workspace, t.proxy_path or "",
                  output.when(t.created_at), output.when(t.ended_at), t.end_reason or t.pending_reason or "")
                 for t in data.tensorboards],
                json_data=data)


@tensorboard.command("describe")
@click.argument("tensorboard_id", type=int)
@format_options
@click.pass_context
def describe(ctx: click.Context, tensorboard_id: int, fmt: output.Format) -> None:
    """Show what one TensorBoard shows, its state and address.

    Its experiments and trials, owner, workspace, when it started and ended and why. It changes nothing."""
    tb = client_of(ctx).get_tensorboard(tensorboard_id).tensorboard
    shown = (tb.config or {}).get("tensorboard") or {}
    rows = [("ID", tb.id), ("Description", tb.description), ("State", tb.state), ("Result", tb.result),
            ("Experiments", ", ".join(str(e) for e in shown.get("experiment_ids") or [])),
            ("Trials", ", ".join(str(t) for t in shown.get("trial_ids") or []) or "all"),
            ("Owner", tb.owner), ("Workspace", tb.workspace), ("Address", tb.proxy_path or ""),
            ("Created", output.when(tb.created_at)), ("Ended", output.when(tb.ended_at)),
            ("Note", tb.end_reason or tb.pending_reason or "")]
    output.emit(fmt, ["Field", "Value"], rows, json_data=tb)


@tensorboard.command("logs")
@click.argument("tensorboard_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the TensorBoard ends.")
@click.pass_context
def logs(ctx: click.Context, tensorboard_id: int, follow: bool) -> None:
    """Print a TensorBoard's output so far.

    What it brought from checkpoint storage, and TensorBoard's own lines; --follow keeps printing new lines until
    it ends. It changes nothing."""
    client = client_of(ctx)
    client.get_tensorboard(tensorboard_id)  # 404 for what is no TensorBoard
    follow_task_logs(client, tensorboard_id, follow)


@tensorboard.command("kill")
@click.argument("tensorboard_ids", type=int, nargs=-1, required=True)
@click.pass_context
def kill(ctx: click.Context, tensorboard_ids: tuple[int, ...]) -> None:
    """Stop TensorBoards at once; a queued one never starts. One that has already ended is refused."""
    client = client_of(ctx)
    for tb_id in tensorboard_ids:
        client.kill_tensorboard(tb_id)
        output.console.print(f"Killed TensorBoard {tb_id}.")
