"""`stalwart cmd|command run|list|describe|config|logs|kill|set`: run any program on the cluster as a task."""

from __future__ import annotations

import base64
import pathlib
import sys
import tempfile
import time
from typing import Any

import click
import yaml

from stalwart.api.errors import ConfigError, InvalidRequest
from stalwart.api.models.tasks import Command
from stalwart.cli import output, queued
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.cli.follow import follow_task_logs
from stalwart.cli.jobs import set_command
from stalwart.client import Client
from stalwart.config import apply_overrides
from stalwart.context import pack_context


@click.group("command", cls=AliasedGroup, aliases={"ls": "list"})
def command() -> None:
    """Run any program on the cluster, as a job in the queue.

    A command is a task that is not a trial: it waits in the job queue for slots like an experiment, but it is
    never preempted, saves no checkpoint and ends when its program exits or is killed. `cmd` is short for
    `command`."""


def _config(config_file: str | None, overrides: tuple[str, ...], entrypoint: tuple[str, ...]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if config_file:
        p = pathlib.Path(config_file)
        if not p.is_file():
            raise InvalidRequest(f"--config-file: '{config_file}' does not exist")
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as err:
            raise ConfigError(f"{config_file}: malformed YAML: {err}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{config_file}: expected a mapping of config keys")
    if overrides:
        data = apply_overrides(data, list(overrides))
    if entrypoint:
        data["entrypoint"] = list(entrypoint)
    if not data.get("entrypoint"):
        raise InvalidRequest("give the program to run, e.g. `stalwart cmd run python3 train.py`")
    if isinstance(data["entrypoint"], str):
        data["entrypoint"] = ["sh", "-c", data["entrypoint"]]
    return data


@command.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--config-file", default=None, help="YAML file with the command config (resources, environment).")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VAL", help="Override a config key (dotted path).")
@click.option("-c", "--context", "context_dir", default=None, help="Directory shipped as the working directory.")
@click.option("-i", "--include", "includes", multiple=True, metavar="DIR",
              help="Extra directory shipped too, under its own name in the working directory (repeatable).")
@click.option("-d", "--detach", is_flag=True, help="Print the id and return instead of following the logs.")
@click.option("--template", default=None, metavar="NAME",
              help="A configuration template the master merges under the config (`stalwart template list`).")
@click.argument("entrypoint", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, config_file: str | None, overrides: tuple[str, ...], context_dir: str | None,
        includes: tuple[str, ...], detach: bool, template: str | None, entrypoint: tuple[str, ...]) -> None:
    """Run a program on the cluster and print its output.

    ENTRYPOINT... is the program and its arguments; it runs on an agent in a copy of --context's directory (if
    given, with each --include directory under its own name), with resources.slots slots (1 by default, 0 for
    CPU-only on the aux pool). Without --detach it says why while the command waits in the queue, then prints the
    output and exits with the command's exit code; with --detach it prints the command's id and returns (`cmd logs
    ID --follow` prints the output later, `cmd kill ID` stops it). --template merges a configuration template under
    the config (the config's own values win)."""
    config = _config(config_file, overrides, entrypoint)
    context_b64 = _context(context_dir, includes)
    client = client_of(ctx)
    cmd = client.create_command(config, context_b64, template=template).command
    output.console.print(f"Launched command {cmd.id} ({cmd.description}) in pool {cmd.resource_pool}.")
    if not detach:
        queued.wait_while_queued(client, "COMMAND", cmd.id, f"Command {cmd.id}", hint=(
            f"(`stalwart job list` shows the queue; `stalwart cmd kill {cmd.id}` cancels it.)"))
        follow_task_logs(client, cmd.id, True)
        final = _ended(client, cmd.id)
        output.console.print(f"Command {cmd.id} ended: {final.result} (exit code {final.exit_code}).")
        sys.exit(exit_status(final))


def _ended(client: Client, cmd_id: int, timeout: float = 30.0) -> Command:
    """The command once the master has recorded its end (its log stream can close a moment before)."""
    deadline = time.monotonic() + timeout
    while True:
        final = client.get_command(cmd_id).command
        if final.result != "ACTIVE" or time.monotonic() > deadline:
            return final
        time.sleep(0.2)


def exit_status(cmd: Command) -> int:
    """What `cmd run` exits with: the command's own code; 1 when it ended badly without one (killed, lost)."""
    code = cmd.exit_code
    if cmd.result == "COMPLETED":
        return 0
    if isinstance(code, int) and 0 < code < 256:
        return code
    if isinstance(code, int) and -64 < code < 0:  # killed by signal -code, as a shell reports it
        return 128 - code
    return 1


def _context(context_dir: str | None, includes: tuple[str, ...]) -> str | None:
    """The working directory to ship, packed (base64): --context's with each --include under its name; None when
    neither is given."""
    if not context_dir and not includes:
        return None
    with tempfile.TemporaryDirectory() as empty:
        packed = pack_context(context_dir or empty, includes)
    for w in packed.warnings:
        output.warn(w)
    return base64.b64encode(packed.data).decode()


@command.command("describe")
@click.argument("cmd_id", type=int)
@format_options
@click.pass_context
def describe(ctx: click.Context, cmd_id: int, fmt: output.Format) -> None:
    """Show one command: its kind, state, result and program.

    The result (COMPLETED, ERROR or CANCELED once it has ended) and exit code, who started it, its workspace,
    project and pool, when it was created and ended, and why it still waits if queued. `cmd config ID` prints its
    config. It changes nothing."""
    cmd = client_of(ctx).get_command(cmd_id).command
    rows = [("ID", cmd.id), ("Kind", cmd.kind), ("Description", cmd.description), ("State", cmd.state),
            ("Result", cmd.result), ("Exit code", cmd.exit_code), ("Owner", cmd.owner), ("Workspace", cmd.workspace),
            ("Project", cmd.project), ("Pool", cmd.resource_pool), ("Created", output.when(cmd.created_at)),
            ("Ended", output.when(cmd.ended_at)), ("Ended because", cmd.end_reason or ""),
            ("Program", _program(cmd.entrypoint)),
            ("Note", cmd.pending_reason or "")]
    output.emit(fmt, ["Field", "Value"], rows, json_data=cmd)


def _program(entrypoint: Any) -> str:
    return " ".join(str(a) for a in entrypoint) if isinstance(entrypoint, list) else str(entrypoint or "")


@command.command("config")
@click.argument("cmd_id", type=int)
@click.pass_context
def config(ctx: click.Context, cmd_id: int) -> None:
    """Print a command's config as YAML, as the master stored it.

    A template given at `cmd run --template` is merged in; secrets (storage keys, registry passwords) are shown
    hidden. It changes nothing."""
    stored = client_of(ctx).get_command(cmd_id).command.config or {}
    output.console.print(yaml.safe_dump(stored, sort_keys=False).rstrip(), markup=False, highlight=False)


@command.command("list")
@click.option("--active", "active_only", is_flag=True, help="Only commands that have not ended.")
@click.option("-a", "--all", "show_all", is_flag=True, hidden=True,
              help="Include commands that have ended (the default).")
@format_options
@click.pass_context
def list_(ctx: click.Context, active_only: bool, show_all: bool, fmt: output.Format) -> None:
    """List commands with their state, result and exit code.

    Ended commands too, unless --active: a row per command with its program, state, result (COMPLETED, ERROR or
    CANCELED once it has ended), exit code, owner, where it runs, when it was created and ended, and why one still
    queued waits. `cmd logs ID` prints one's output."""
    data = client_of(ctx).list_tasks(include_ended=not active_only)
    output.emit(fmt, ["ID", "Description", "State", "Result", "Exit code", "Owner", "Workspace", "Project", "Pool",
                      "Created", "Ended", "Note"],
                [(c.id, c.description, c.state, c.result, c.exit_code, c.owner, c.workspace, c.project,
                  c.resource_pool, output.when(c.created_at), output.when(c.ended_at), c.pending_reason or "")
                 for c in data.tasks],
                json_data=data)


@command.command("logs")
@click.argument("cmd_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the command ends.")
@click.pass_context
def logs(ctx: click.Context, cmd_id: int, follow: bool) -> None:
    """Print a command's output so far.

    Its standard output and error lines, as the master keeps them; --follow keeps printing new lines until the
    command ends. It changes nothing: `cmd kill` stops a command."""
    follow_task_logs(client_of(ctx), cmd_id, follow)


@command.command("kill")
@click.argument("cmd_ids", type=int, nargs=-1, required=True)
@click.pass_context
def kill(ctx: click.Context, cmd_ids: tuple[int, ...]) -> None:
    """Stop commands at once; a queued one never starts.

    Each running command's program is killed (SIGKILL, with no chance to clean up) and the command ends CANCELED;
    one still waiting in the queue ends CANCELED without starting. A command that has already ended is refused.
    Commands save no checkpoint, so there is no gentler stop."""
    for cmd_id in cmd_ids:
        client_of(ctx).kill_command(cmd_id)
        output.console.print(f"Killed command {cmd_id}.")


command.add_command(set_command("command", ("priority",)))
