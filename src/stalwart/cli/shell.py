"""`stalwart shell start|open|show-ssh-command|list|describe|logs|kill`: an sshd on the cluster, reached with `ssh`
through the master."""

from __future__ import annotations

import shlex
import subprocess
import sys

import click
import yaml

from stalwart.api.models.tasks import Command
from stalwart.cli import output, queued, shell_ssh, task_kinds
from stalwart.cli.base import AliasedGroup, client_of, format_options, root_options
from stalwart.cli.follow import follow_task_logs
from stalwart.client import Client

READY_TIMEOUT_S = 300.0
"""How long `start` and `open` wait for the shell's sshd to listen."""


@click.group("shell", cls=AliasedGroup, aliases={"ls": "list"})
def shell() -> None:
    """Open shells on the cluster with ssh, via the master.

    A shell is a task serving an OpenSSH server. `shell start` starts one (with its own key pair, made by the
    master); `shell open ID` logs in with ssh, whose connection goes through the master (no agent port needs to be
    reachable), and runs a login shell, or the command given after `--`, in the task's working directory. Only the
    shell's owner may open it. It stops after its config's idle_timeout without an open session, or with `shell
    kill`. The agent needs /usr/sbin/sshd."""



def wait_until_served(client: Client, shell_id: int, timeout: float = READY_TIMEOUT_S) -> Command:
    """The shell once its sshd listens; 409 if it ends first or the time runs out."""
    return task_kinds.wait_until_served(lambda: client.get_shell(shell_id).shell, f"shell {shell_id}", "shell",
                                        timeout, interval=0.3)


@shell.command("start")
@click.option("--config-file", default=None, help="YAML file with the shell's config (resources, idle_timeout).")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VAL", help="Override a config key (dotted path).")
@click.option("-c", "--context", "context_dir", default=None, help="Directory shipped as the working directory.")
@click.option("--template", default=None, metavar="NAME",
              help="A configuration template the master merges under the config (`stalwart template list`).")
@click.option("-d", "--detach", is_flag=True, help="Print the id and return instead of opening the shell.")
@click.pass_context
def start(ctx: click.Context, config_file: str | None, overrides: tuple[str, ...], context_dir: str | None,
          template: str | None, detach: bool) -> None:
    """Start a shell and open it.

    The shell waits in the job queue like a command (resources.slots: 1 by default, 0 for CPU-only), then serves
    sshd; without --detach this opens it as `shell open` does once it listens. Its idle_timeout (e.g. `--config
    idle_timeout=30m`) stops it after that long without an open session."""
    client = client_of(ctx)
    made = client.create_shell(task_kinds.config_of(config_file, overrides), task_kinds.context_of(context_dir),
                               template=template).shell
    output.console.print(f"Launched shell {made.id} in pool {made.resource_pool}.")
    if detach:
        return
    queued.wait_while_queued(client, "COMMAND", made.id, f"Shell {made.id}", hint=(
        f"(`stalwart job list` shows the queue; `stalwart shell kill {made.id}` cancels it.)"))
    sys.exit(_open(ctx, client, made.id, ()))


def _open(ctx: click.Context, client: Client, shell_id: int, command: tuple[str, ...]) -> int:
    wait_until_served(client, shell_id)
    key = client.shell_key(shell_id)
    options = root_options(ctx)
    proxy = shell_ssh.tunnel_argv(shell_id, options.master, options.user)
    with shell_ssh.temporary_key(key) as key_file:
        argv = shell_ssh.ssh_argv(shell_id, key_file, shell_ssh.login_user(key), proxy, command,
                                  tty=not command and sys.stdin.isatty())
        return subprocess.run(argv, check=False).returncode


@shell.command("open", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("shell_id", type=int)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def open_(ctx: click.Context, shell_id: int, command: tuple[str, ...]) -> None:
    """Log in to a shell with ssh, through the master.

    It exits with ssh's status. COMMAND (after `--`) runs instead of a login shell, in the task's working
    directory. Only the shell's owner may open it. The shell's private key lives in a 0600 temporary file while ssh
    runs."""
    sys.exit(_open(ctx, client_of(ctx), shell_id, command))


@shell.command("show-ssh-command")
@click.argument("shell_id", type=int)
@click.pass_context
def show_ssh_command(ctx: click.Context, shell_id: int) -> None:
    """Print the ssh command line that opens a shell.

    For one's own ssh, scp or editor. It writes the shell's private key to a 0600 file under the CLI's home
    ($STALWART_HOME, else ~/.stalwart) and names it with -i; the tunnel is this CLI's hidden `shell tunnel ID` as
    ssh's ProxyCommand."""
    client = client_of(ctx)
    key = client.shell_key(shell_id)
    options = root_options(ctx)
    argv = shell_ssh.ssh_argv(shell_id, shell_ssh.kept_key(key, shell_id), shell_ssh.login_user(key),
                              shell_ssh.tunnel_argv(shell_id, options.master, options.user), (), tty=False)
    click.echo(shlex.join(argv[:-1]))


@shell.command("tunnel", hidden=True)
@click.argument("shell_id", type=int)
@click.pass_context
def tunnel(ctx: click.Context, shell_id: int) -> None:
    """Relay stdin and stdout to a shell's tunnel.

    ssh's ProxyCommand: stdin goes to the shell's tunnel through the master, the tunnel's bytes to stdout."""
    url, headers = client_of(ctx).shell_tunnel_target(shell_id)
    sys.exit(shell_ssh.run_tunnel(url, headers, shell_id))


@shell.command("list")
@click.option("-a", "--all", "show_all", is_flag=True, help="Also the shells that have ended.")
@format_options
@click.pass_context
def list_(ctx: click.Context, show_all: bool, fmt: output.Format) -> None:
    """List shells with their state and owner.

    Those that have not ended, unless --all; ended ones say why they ended."""
    data = client_of(ctx).list_shells(include_ended=show_all)
    output.emit(fmt, ["ID", "Description", "State", "Result", "Owner", "Workspace", "Project", "Pool", "Created",
                      "Ended", "Why it ended"],
                [(s.id, s.description, s.state, s.result, s.owner, s.workspace, s.project, s.resource_pool,
                  output.when(s.created_at), output.when(s.ended_at), s.end_reason or "") for s in data.shells],
                json_data=data)


@shell.command("describe")
@click.argument("shell_id", type=int)
@format_options
@click.pass_context
def describe(ctx: click.Context, shell_id: int, fmt: output.Format) -> None:
    """Show one shell: its state, owner and place.

    Also why it ended, and its path under the master's proxy. Its key is never shown."""
    found = client_of(ctx).get_shell(shell_id).shell
    rows = [("ID", found.id), ("State", found.state), ("Result", found.result), ("Ended because", found.end_reason),
            ("Owner", found.owner), ("Workspace", found.workspace), ("Project", found.project),
            ("Pool", found.resource_pool), ("Created", output.when(found.created_at)),
            ("Ended", output.when(found.ended_at)), ("Proxy path", found.proxy_path),
            ("Note", found.pending_reason or "")]
    output.emit(fmt, ["Field", "Value"], rows, json_data=found)


@shell.command("config")
@click.argument("shell_id", type=int)
@click.pass_context
def config(ctx: click.Context, shell_id: int) -> None:
    """Print a shell's config as YAML, as stored.

    Nothing secret is in it: the public key is, the private key never."""
    stored = client_of(ctx).get_shell(shell_id).shell.config or {}
    output.console.print(yaml.safe_dump(stored, sort_keys=False).rstrip(), markup=False, highlight=False)


@shell.command("logs")
@click.argument("shell_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the shell ends.")
@click.pass_context
def logs(ctx: click.Context, shell_id: int, follow: bool) -> None:
    """Print a shell's output so far: sshd's log.

    Logins and errors; --follow keeps printing until the shell ends."""
    follow_task_logs(client_of(ctx), shell_id, follow)


@shell.command("kill")
@click.argument("shell_ids", type=int, nargs=-1, required=True)
@click.pass_context
def kill(ctx: click.Context, shell_ids: tuple[int, ...]) -> None:
    """Stop shells at once, open sessions included.

    sshd and every session's programs end; a shell still queued never starts."""
    for shell_id in shell_ids:
        client_of(ctx).kill_shell(shell_id)
        output.console.print(f"Killed shell {shell_id}.")
