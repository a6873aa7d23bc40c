"""`stalwart trial|t ...`: describe (with restart history), logs (with --follow), kill."""

from __future__ import annotations

import click

from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, json_option
from stalwart.cli.follow import follow_trial_logs


@click.group("trial", cls=AliasedGroup)
def trial() -> None:
    """Inspect and manage trials."""


@trial.command("describe")
@click.argument("trial_id", type=int)
@json_option
@click.pass_context
def describe(ctx, trial_id, as_json) -> None:
    """Show a trial, its runs (restarts with reasons) and its latest checkpoint."""
    d = client_of(ctx).get_trial(trial_id)
    if as_json:
        return output.print_json(d)
    t = d.trial
    val = t.latest_validation
    ckpt = d.latest_checkpoint
    output.table(["Field", "Value"], [
        ("Trial", t.id), ("Experiment", t.experiment_id), ("State", t.state),
        ("Steps completed", t.steps_completed), ("Restarts", t.restarts),
        ("Hyperparameters", output.short_metrics(t.hparams, limit=50)),
        ("Latest validation", output.short_metrics(val.metrics if val else None, limit=50)),
        ("Latest checkpoint", f"{ckpt.uuid} (steps {ckpt.steps_completed})" if ckpt else ""),
        ("Error", t.error_message),
    ])
    output.table(
        ["Run", "State", "Agent", "Exit code", "Exit reason", "Started", "Ended"],
        [(r.run_id, r.state, r.agent_id, r.exit_code, r.exit_reason, output.when(r.started_at),
          output.when(r.ended_at)) for r in d.runs],
        title="Runs",
    )


@trial.command("logs")
@click.argument("trial_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the trial ends.")
@click.pass_context
def logs(ctx, trial_id, follow) -> None:
    """Print a trial's logs."""
    follow_trial_logs(client_of(ctx), trial_id, follow=follow)


@trial.command("kill")
@click.argument("trial_id", type=int)
@click.pass_context
def kill(ctx, trial_id) -> None:
    """Kill a trial at once (no checkpoint)."""
    client_of(ctx).kill_trial(trial_id)
    output.console.print(f"Killed trial {trial_id}")
