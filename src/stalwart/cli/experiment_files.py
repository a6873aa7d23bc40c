"""`stalwart e logs|download|config|download-model-def`: an experiment's logs, checkpoints, config and code."""

from __future__ import annotations

import base64
import pathlib
import sys
import time

import click
import yaml

from stalwart.api.errors import NotFoundError
from stalwart.cli import output
from stalwart.cli.base import client_of
from stalwart.cli.checkpoint import DownloadMode, fetch_checkpoint, mode_option
from stalwart.cli.checkpoint_pick import rank_checkpoints
from stalwart.cli.follow import follow_trial_logs
from stalwart.cli.log_filters import LogFilter, log_filter_options

POLL_SECONDS = 0.5
"""How often `e logs -f` looks for new trials while none is left to follow."""


@click.command("logs")
@click.argument("exp_id", type=int)
@click.option("-f", "--follow", is_flag=True,
              help="Follow each trial (those the search creates later too) until the experiment ends.")
@log_filter_options
@click.pass_context
def logs(ctx: click.Context, exp_id: int, follow: bool, log_filter: LogFilter) -> None:
    """Print the logs of all of an experiment's trials.

    Trial by trial, each line after its trial id; the filters (--level, --since, --grep, --head, --tail) apply
    to each trial's lines. --follow keeps printing, the trials the search creates later too, until the
    experiment ends. `trial logs` prints one trial's."""
    client = client_of(ctx)
    printed: set[int] = set()
    while True:
        ended = client.get_experiment(exp_id).experiment.state.terminal  # read first: no trial is created after it
        trials = sorted((t for t in client.experiment_trials(exp_id).trials if t.id not in printed), key=lambda t: t.id)
        for t in trials:
            follow_trial_logs(client, t.id, follow=follow, log_filter=log_filter, prefix=f"[trial {t.id}] ")
            printed.add(t.id)
        if not follow or (ended and not trials):
            break
        if not trials:
            time.sleep(POLL_SECONDS)
    if not printed:
        output.info(f"Experiment {exp_id} has no trials.")


@click.command("config")
@click.argument("exp_id", type=int)
@click.pass_context
def config(ctx: click.Context, exp_id: int) -> None:
    """Print an experiment's config as the master stored it.

    As YAML on standard output, with the defaults filled in: the config its trials ran with, ready for `e create`
    or `fork`."""
    stored = client_of(ctx).get_experiment(exp_id).config
    sys.stdout.write(yaml.safe_dump(stored, sort_keys=False, default_flow_style=False))


@click.command("download-model-def")
@click.argument("exp_id", type=int)
@click.option("--output-dir", default=".", show_default=True, help="Directory to write the archive in.")
@click.pass_context
def download_model_def(ctx: click.Context, exp_id: int, output_dir: str) -> None:
    """Download an experiment's code as a .tgz archive.

    The context directory it was created with, as experiment_ID_model_def.tgz in --output-dir. `download` fetches
    its checkpoints instead."""
    archive = base64.b64decode(client_of(ctx).experiment_model_def(exp_id).b64Tgz)
    directory = pathlib.Path(output_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"experiment_{exp_id}_model_def.tgz"
    path.write_bytes(archive)
    output.console.print(f"Wrote experiment {exp_id}'s model definition to {path}")


@click.command("download")
@click.argument("exp_id", type=int)
@click.option("-o", "--output-dir", default="checkpoints", show_default=True,
              help="Top directory: each checkpoint goes to OUTPUT_DIR/UUID.")
@click.option("--top-n", default=1, show_default=True, type=click.IntRange(1), help="How many checkpoints.")
@click.option("--sort-by", default=None, metavar="METRIC",
              help="Validation metric to rank by (default: the searcher's metric).")
@click.option("--smaller-is-better", type=bool, default=None,
              help="With --sort-by: true or false (default: the searcher's setting).")
@click.option("-q", "--quiet", is_flag=True, help="Print only the paths.")
@mode_option
@click.pass_context
def download(ctx: click.Context, exp_id: int, output_dir: str, top_n: int, sort_by: str | None,
             smaller_is_better: bool | None, quiet: bool, mode: DownloadMode) -> None:
    """Download an experiment's best checkpoints.

    The --top-n best of all its trials' checkpoints, by the validation metric at their steps (the searcher's
    metric, or --sort-by), each into OUTPUT_DIR/UUID; checkpoints without a validation come last, most trained
    first. `trial download` picks one of a single trial's; `checkpoint download` takes a uuid."""
    client = client_of(ctx)
    exp = client.get_experiment(exp_id).experiment
    metric = sort_by or exp.metric
    smaller = exp.smaller_is_better if smaller_is_better is None else smaller_is_better
    ranked = rank_checkpoints(client, client.experiment_checkpoints(exp_id).checkpoints, metric, smaller)
    if not ranked:
        raise NotFoundError(f"experiment {exp_id} has no completed checkpoint to download")
    top = pathlib.Path(output_dir)
    for scored in ranked[:top_n]:
        ckpt = scored.checkpoint
        dest = top / ckpt.uuid
        fetch_checkpoint(client, ckpt, dest, mode)
        if quiet:
            output.console.print(str(dest))
        else:
            value = "no validation" if scored.value is None else f"{metric}={scored.value:.6g}"
            output.console.print(f"Downloaded checkpoint {ckpt.uuid} (trial {ckpt.trial_id}, steps "
                                 f"{ckpt.steps_completed}, {value}) to {dest}")
