"""`stalwart trial|t ...`: describe (with restart history, --metrics), logs (filters, --follow), download, kill."""

from __future__ import annotations

import pathlib

import click

from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.api.models.checkpoints import Checkpoint
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.cli.checkpoint import DownloadMode, fetch_checkpoint, mode_option
from stalwart.cli.checkpoint_pick import rank_checkpoints
from stalwart.cli.follow import follow_trial_logs
from stalwart.cli.log_filters import LogFilter, log_filter_options
from stalwart.cli.metric_rows import metric_table
from stalwart.client import Client


@click.group("trial", cls=AliasedGroup)
def trial() -> None:
    """Inspect a trial's runs, logs and checkpoints, or kill it.

    A trial is one training run of an experiment's search, with its own hyperparameters; its id is in
    `e describe` and `e list-trials`. `t` is short for `trial`."""


@trial.command("describe")
@click.argument("trial_id", type=int)
@click.option("--metrics", "with_metrics", is_flag=True,
              help="Also every metric reported, a row per step, with the checkpoint taken there.")
@format_options
@click.pass_context
def describe(ctx: click.Context, trial_id: int, with_metrics: bool, fmt: output.Format) -> None:
    """Show a trial, its restarts and its latest checkpoint.

    The trial's state, steps, restarts, hyperparameters, latest validation, latest checkpoint and error, then a
    row per run (each start: on which agent, and how and why it ended, e.g. failed and restarted, preempted, agent
    lost); --metrics adds every metric it reported, a row per step. `logs` prints what it wrote."""
    client = client_of(ctx)
    d = client.get_trial(trial_id)
    metrics = metric_table(client, [trial_id]) if with_metrics else None
    if fmt is output.Format.JSON:
        data = d.model_dump(mode="json", exclude_unset=True)
        return output.print_json(data if metrics is None else {**data, "metrics": metrics.points})
    t = d.trial
    val = t.latest_validation
    ckpt = d.latest_checkpoint
    fields = [
        ("Trial", t.id), ("Experiment", t.experiment_id), ("State", t.state),
        ("Steps completed", t.steps_completed), ("Restarts", t.restarts),
        ("Hyperparameters", output.short_metrics(t.hparams, limit=50)),
        ("Latest validation", output.short_metrics(val.metrics if val else None, limit=50)),
        ("Latest checkpoint", f"{ckpt.uuid} (steps {ckpt.steps_completed})" if ckpt else ""),
        ("Log policy matched", t.log_policy_matched),
        ("Error", t.error_message),
    ]
    if fmt is output.Format.CSV:
        output.print_csv([name for name, _ in fields], [[value for _, value in fields]])
        output.console.print()
    else:
        output.table(["Field", "Value"], fields)
    output.emit(
        fmt, ["Run", "State", "Agent", "Exit code", "Exit reason", "Started", "Ended"],
        [(r.run_id, r.state, r.agent_id, r.exit_code, r.exit_reason, output.when(r.started_at),
          output.when(r.ended_at)) for r in d.runs],
        title="Runs",
    )
    if d.log_policy_matches:
        output.emit(
            fmt, ["Policy", "Action", "Run's allocation", "Agent", "Line"],
            [(p.policy_name, p.action or "(label only)", p.allocation_id, p.agent_id, p.log.strip()[:200])
             for p in d.log_policy_matches],
            title="Log policies matched",
        )
    if metrics is not None:
        if fmt is output.Format.CSV:
            output.console.print()
        output.emit(fmt, metrics.columns, metrics.rows, title="Metrics")


@trial.command("logs")
@click.argument("trial_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the trial ends.")
@log_filter_options
@click.pass_context
def logs(ctx: click.Context, trial_id: int, follow: bool, log_filter: LogFilter) -> None:
    """Print a trial's logs, every run of it, oldest first.

    What the trial wrote, with the master's lines about it (restarts, preemptions, exits); --level,
    --since, --grep, --head and --tail filter them on the master, and --follow keeps printing new lines until the
    trial ends. `e logs` prints every trial of an experiment."""
    follow_trial_logs(client_of(ctx), trial_id, follow=follow, log_filter=log_filter)


@trial.command("kill")
@click.argument("trial_id", type=int)
@click.pass_context
def kill(ctx: click.Context, trial_id: int) -> None:
    """Stop one trial at once, with no checkpoint.

    The trial's processes are killed (SIGKILL): what it trained since its latest checkpoint is lost, and it ends
    CANCELED, for good. The experiment's other trials go on; `e kill` stops a whole experiment at once, `e cancel`
    lets its trials checkpoint first, and `e pause` stops it for now."""
    client_of(ctx).kill_trial(trial_id)
    output.console.print(f"Killed trial {trial_id}")


def _chosen(client: Client, trial_id: int, best: bool, uuid: str | None) -> Checkpoint:
    """The checkpoint `t download` is asked for: --uuid, --best (by the searcher metric), else the latest."""
    d = client.get_trial(trial_id)
    if uuid is not None:
        ckpt = client.get_checkpoint(uuid).checkpoint
        if ckpt.trial_id != trial_id:
            raise InvalidRequest(f"checkpoint {uuid} belongs to trial {ckpt.trial_id}, not to trial {trial_id}")
        return ckpt
    if best:
        exp = client.get_experiment(d.trial.experiment_id).experiment
        ranked = rank_checkpoints(client, client.trial_checkpoints(trial_id).checkpoints, exp.metric,
                                  exp.smaller_is_better)
        if ranked:
            return ranked[0].checkpoint
    elif d.latest_checkpoint is not None:
        return d.latest_checkpoint
    raise NotFoundError(f"trial {trial_id} has no completed checkpoint")


@trial.command("download")
@click.argument("trial_id", type=int)
@click.option("--latest", "which", flag_value="latest", default=True, help="The latest checkpoint (the default).")
@click.option("--best", "which", flag_value="best", help="The best by the searcher's metric.")
@click.option("--uuid", default=None, help="This checkpoint of the trial.")
@click.option("-o", "--output-dir", default=None, help="Where to put the files (default: checkpoints/UUID).")
@click.option("-q", "--quiet", is_flag=True, help="Print only the path.")
@mode_option
@click.pass_context
def download(ctx: click.Context, trial_id: int, which: str, uuid: str | None, output_dir: str | None, quiet: bool,
             mode: DownloadMode) -> None:
    """Download one of a trial's checkpoints, the latest by default.

    --best takes the best by the experiment's searcher metric, --uuid a given one of this trial's; the files go
    to --output-dir (default checkpoints/UUID), and the path is printed. `e download` ranks all of an experiment's
    checkpoints; `checkpoint download` takes any uuid."""
    client = client_of(ctx)
    ckpt = _chosen(client, trial_id, which == "best", uuid)
    dest = pathlib.Path(output_dir or pathlib.Path("checkpoints") / ckpt.uuid)
    fetch_checkpoint(client, ckpt, dest, mode)
    if quiet:
        output.console.print(str(dest))
    else:
        output.console.print(f"Downloaded checkpoint {ckpt.uuid} (trial {trial_id}, steps {ckpt.steps_completed}) "
                             f"to {dest}")
