"""Entry point of the `stalwart` command: the top-level group, aliases, and one-line error reporting."""

from __future__ import annotations

import sys

import click
from rich.text import Text

import stalwart
from stalwart.api.errors import StalwartError
from stalwart.cli import experiment_continue, experiment_edit, experiment_files
from stalwart.cli.audit import audit
from stalwart.cli.auth import auth
from stalwart.cli.base import AliasedGroup, RootOptions
from stalwart.cli.checkpoint import checkpoint
from stalwart.cli.cluster import agent, down, master, slot, up
from stalwart.cli.command import command
from stalwart.cli.experiment import experiment, preview_search
from stalwart.cli.jobs import job
from stalwart.cli.model import model
from stalwart.cli.notebook import notebook
from stalwart.cli.output import err_console
from stalwart.cli.project import project
from stalwart.cli.rbac import rbac
from stalwart.cli.resource_pool import resource_pool
from stalwart.cli.shell import shell
from stalwart.cli.template import template
from stalwart.cli.tensorboard import tensorboard
from stalwart.cli.token import token
from stalwart.cli.trial import trial
from stalwart.cli.user import user
from stalwart.cli.user_group import user_group
from stalwart.cli.webhook import webhook
from stalwart.cli.workspace import workspace

EXIT_CODES = ("Exit codes: 0 done; 1 failed (an experiment that did not complete, an internal error of the master); "
              "2 bad input (a bad id, option, override or config); 3 not found; 4 wrong state "
              "(e.g. deleting an active experiment); 5 not allowed; 6 master unreachable; 130 interrupted, or a "
              "question left unanswered. `cmd run` exits with its program's code.")


@click.group(cls=AliasedGroup, epilog=EXIT_CODES,
             aliases={"e": "experiment", "t": "trial", "c": "checkpoint", "a": "agent", "j": "job",
                      "cmd": "command", "s": "slot", "u": "user", "tkn": "token", "w": "workspace", "p": "project",
                      "rp": "resource-pool", "m": "model", "tpl": "template",
                      "tb": "tensorboard", "nb": "notebook"},
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-m", "--master", "master_url", default=None,
              help="Master address (else $STALWART_MASTER, $DET_MASTER, or the local cluster).")
@click.option("-u", "--user", "user_name", default=None, metavar="NAME",
              help="Act as this user: its kept session, else a login asking for its password (else $STALWART_USER "
                   "or $DET_USER with a password in the environment, a token in $STALWART_USER_TOKEN, or the user "
                   "of `stalwart user login`).")
@click.version_option(stalwart.__version__, "-v", "--version", prog_name="stalwart")
@click.pass_context
def cli(ctx: click.Context, master_url: str | None, user_name: str | None) -> None:
    """Train models on your cluster; Determined experiments run unchanged.

    Start a local cluster with `stalwart up`, then run an experiment with `stalwart e create CONFIG.yaml CODE_DIR
    --follow`. Each command's --help says what it does and changes. Short names: e experiment, t trial,
    c checkpoint, cmd command, j job, a agent, s slot, u user, tkn token, w workspace, p project, rp
    resource-pool, m model, tpl template, nb notebook, tb tensorboard."""
    ctx.obj = RootOptions(master=master_url, user=user_name)


for group in (up, down, master, agent, slot, experiment, trial, checkpoint, preview_search, job, command, user, token,
              audit, workspace, project, user_group, rbac, resource_pool, auth, model, webhook, template, tensorboard,
              notebook, shell):
    cli.add_command(group)
for verb in (experiment_edit.delete, experiment_edit.set_, experiment_edit.label, experiment_continue.continue_,
             experiment_continue.fork, experiment_files.logs, experiment_files.config, experiment_files.download,
             experiment_files.download_model_def):
    experiment.add_command(verb)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="stalwart", standalone_mode=False)
    except click.exceptions.Abort:
        err_console.print("Aborted.")
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except StalwartError as err:
        err_console.print(Text("Error: ", style="red") + Text(err.full_message()), soft_wrap=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        raise
    sys.exit(0)


if __name__ == "__main__":
    main()
