"""Entry point of the `stalwart` command: the top-level group, aliases, and one-line error reporting."""

from __future__ import annotations

import sys

import click
from rich.text import Text

import stalwart
from stalwart.api.errors import StalwartError
from stalwart.cli.base import AliasedGroup
from stalwart.cli.checkpoint import checkpoint
from stalwart.cli.cluster import agent, down, master, slot, up
from stalwart.cli.command import command
from stalwart.cli.experiment import experiment, preview_search
from stalwart.cli.jobs import job, set_command
from stalwart.cli.output import err_console
from stalwart.cli.trial import trial


@click.group(cls=AliasedGroup, aliases={"e": "experiment", "t": "trial", "c": "checkpoint", "a": "agent", "j": "job",
                      "cmd": "command", "s": "slot"},
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-m", "--master", "master_url", default=None,
              help="Master address (else $STALWART_MASTER, $DET_MASTER, or the local cluster).")
@click.version_option(stalwart.__version__, "-v", "--version", prog_name="stalwart")
@click.pass_context
def cli(ctx, master_url) -> None:
    """Stalwart: train models on your cluster; runs Determined experiments unchanged."""
    ctx.obj = {"master": master_url}


for group in (up, down, master, agent, slot, experiment, trial, checkpoint, preview_search, job, command):
    cli.add_command(group)
experiment.add_command(set_command("experiment", ("priority", "weight", "max-slots")))


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
