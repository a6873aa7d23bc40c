"""`stalwart e set gc-policy`: change which checkpoints an experiment keeps, showing first what it would delete."""

from __future__ import annotations

import sys

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.experiments import GcCheckpoint, GcPolicyChange
from stalwart.cli import output
from stalwart.cli.base import client_of

COUNT = click.IntRange(min=0, max=2**31 - 1)
CONFIRM = "Apply this policy? The checkpoints it deletes are gone for good."


def _rows(ckpts: list[GcCheckpoint], with_reason: bool) -> list[list[object]]:
    return [[c.trial_id, c.steps_completed, "" if c.metric is None else c.metric, c.uuid,
             *([c.reason] if with_reason else [])] for c in ckpts]


def print_plan(exp_id: int, plan: GcPolicyChange) -> None:
    """The checkpoints a policy deletes (would delete, on a dry run) and those it keeps, with why."""
    metric = f"validation.{plan.metric}" if plan.metric else "metric"
    verb = "would delete" if plan.dry_run else "deleted"
    output.console.print(f"Experiment {exp_id}: the policy save_experiment_best={plan.save_experiment_best}, "
                         f"save_trial_best={plan.save_trial_best}, save_trial_latest={plan.save_trial_latest} "
                         f"{verb} {len(plan.to_delete)} checkpoint(s) and keeps {len(plan.to_keep)}.", markup=False)
    if plan.to_delete:
        output.table(["Trial", "Steps", metric, "UUID"], _rows(plan.to_delete, False),
                     title="Would delete" if plan.dry_run else "Deleted")
    if plan.to_keep:
        output.table(["Trial", "Steps", metric, "UUID", "Kept because"], _rows(plan.to_keep, True), title="Kept")
    if plan.not_deleted:
        output.console.print(f"{len(plan.not_deleted)} checkpoint(s) could not be deleted (still COMPLETED; the master "
                             "log says why); run this command again to retry:", markup=False)
        for c in plan.not_deleted:
            output.console.print(f"  {c.uuid} (trial {c.trial_id}, steps {c.steps_completed})", markup=False)


@click.command("gc-policy")
@click.argument("exp_id", type=int)
@click.option("--save-experiment-best", type=COUNT, required=True,
              help="Keep the N best checkpoints of the whole experiment, by the searcher metric.")
@click.option("--save-trial-best", type=COUNT, required=True,
              help="Keep the N best checkpoints of each trial, by the searcher metric.")
@click.option("--save-trial-latest", type=COUNT, required=True, help="Keep the N latest checkpoints of each trial.")
@click.option("-y", "--yes", is_flag=True, help="Apply without showing the dry run first or asking.")
@click.pass_context
def gc_policy(ctx: click.Context, exp_id: int, save_experiment_best: int, save_trial_best: int,
              save_trial_latest: int, yes: bool) -> None:
    """Choose which checkpoints to keep and delete the others.

    Determined's checkpoint GC policy, changed after the fact: the experiment keeps the union of its N best
    checkpoints, each trial's N best and each trial's N latest (best: by the searcher metric's validation at the
    checkpoint's step). Without --yes it first lists what it would delete (uuid, trial, steps, metric) and what it
    keeps and why, then asks; with no terminal to ask at it stops there (exit 2): pass --yes. Applying stores the
    policy in the experiment's config, so later checkpoints follow it too, and deletes the listed checkpoints' files
    from their storage and marks them DELETED. A checkpoint something else still uses (a warm start's source) stays,
    and so does the latest checkpoint of a trial that has not ended."""
    client = client_of(ctx)

    def change(dry_run: bool) -> GcPolicyChange:
        return client.change_gc_policy(exp_id, save_experiment_best=save_experiment_best,
                                       save_trial_best=save_trial_best, save_trial_latest=save_trial_latest,
                                       dry_run=dry_run)

    if not yes:
        print_plan(exp_id, change(dry_run=True))
        if sys.stdin is None or not sys.stdin.isatty():
            raise InvalidRequest("nothing was changed: there is no terminal to ask at; pass --yes to apply this policy")
        if not click.confirm(CONFIRM, default=False, err=True):
            output.console.print(f"Kept experiment {exp_id}'s policy and checkpoints as they were.")
            return
    print_plan(exp_id, change(dry_run=False))
