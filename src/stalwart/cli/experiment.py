"""`stalwart experiment|e ...`: create (with --follow), list (filtered, sorted), describe (--metrics),
pause/activate/cancel/kill/archive/unarchive, wait, trials, checkpoints. Editing, continuing and files: the
experiment_* modules."""

from __future__ import annotations

import base64
import sys
import time
from typing import get_args

import click
import yaml

from stalwart.api.errors import InvalidRequest, StalwartError
from stalwart.api.models.experiments import BestValidation, CreatedExperiment, Experiment, OrderBy, SortBy
from stalwart.api.models.trials import Trial
from stalwart.api.states import ExperimentState
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.cli.config_file import read_config_text
from stalwart.cli.follow import follow_experiment, print_outcome
from stalwart.cli.metric_rows import metric_table
from stalwart.cli.test_mode import run_local, watch_stages
from stalwart.client import Client
from stalwart.client.experiments import ExperimentAction
from stalwart.config.test_mode import test_mode_config
from stalwart.context import pack_context


@click.group("experiment", cls=AliasedGroup, aliases={"ls": "list", "lt": "list-trials", "lc": "list-checkpoints",
                                                       "unpause": "activate"})
def experiment() -> None:
    """Create, follow, stop and inspect experiments.

    An experiment runs its config's search over the code of a context directory: its searcher creates trials and
    decides how long each trains. Stop one for now with `pause` (`activate` resumes it), for good with `cancel`
    (trials checkpoint first) or `kill` (at once); `archive` hides an ended one and `delete` removes it. `e` is
    short for `experiment`."""


def submit(client: Client, config_text: str, context_b64: str, *, paused: bool, parent_id: int | None = None,
           template: str | None = None) -> tuple[CreatedExperiment, Experiment]:
    """Create an experiment (started unless `paused`; `parent_id`: the one it is forked from; `template`: merged
    under the config by the master), show the master's warnings, and return its answer."""
    reply = client.create_experiment(config_text, context_b64, activate=not paused, parent_id=parent_id,
                                     template=template)
    for w in reply.warnings:
        output.warn(w)
    if reply.experiment is None:
        raise StalwartError("the master created no experiment (it answered as to a validate-only request)")
    return reply, reply.experiment


@experiment.command("create")
@click.argument("config_file")
@click.argument("context_dir")
@click.option("-i", "--include", "includes", multiple=True, help="Extra directory added to the context.")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VAL", help="Override a config key (dotted path).")
@click.option("-f", "--follow", "--follow-first-trial", "follow", is_flag=True, help="Stream the first trial's logs.")
@click.option("--paused", is_flag=True, help="Create the experiment without starting it.")
@click.option("-t", "--test-mode", "test_mode", is_flag=True,
              help="Run a short smoke test (one batch, a validation, a checkpoint) and show each stage.")
@click.option("--local", is_flag=True, help="With --test-mode: run it here, with no master.")
@click.option("--template", default=None, metavar="NAME",
              help="A configuration template the master merges under the config (`stalwart template list`).")
@format_options
@click.pass_context
def create(ctx: click.Context, config_file: str, context_dir: str, includes: tuple[str, ...],
           overrides: tuple[str, ...], follow: bool, paused: bool, test_mode: bool, local: bool,
           template: str | None, fmt: output.Format) -> None:
    """Create and start an experiment from a config and code.

    CONFIG_FILE is its YAML config (Determined's schema; --config KEY=VAL changes a key); CONTEXT_DIR holds its
    code, packed (less what .detignore excludes; 95 MiB at most) and sent to the master, which checks both before
    it stores anything. It prints the new experiment's id and returns; --follow streams the first trial's logs
    until the experiment ends, --paused creates it without starting it (`activate` starts it), and --test-mode runs
    a short smoke test instead. --template merges a configuration template under the config (the config's own
    values win; the merged config is what the experiment keeps). `fork` creates one from an existing experiment's
    config and code."""
    if sum(map(bool, (follow, paused, test_mode))) > 1:
        raise InvalidRequest("--follow, --paused and --test-mode cannot be used together")
    if local and not test_mode:
        raise InvalidRequest("--local needs --test-mode")
    if local and template is not None:
        raise InvalidRequest("--template needs the master (it keeps the templates): drop --local, or --template")
    text = read_config_text(config_file, overrides)
    if test_mode:
        config = test_mode_config(text)
        if local:
            sys.exit(run_local(config, context_dir))
        text = yaml.safe_dump(config, sort_keys=False)
    packed = pack_context(context_dir, includes)
    for w in packed.warnings:
        output.warn(w)
    client = client_of(ctx)
    reply, exp = submit(client, text, base64.b64encode(packed.data).decode(), paused=paused, template=template)
    if fmt is output.Format.TABLE:
        output.console.print(f"Created experiment {exp.id} ({exp.name}), state {exp.state.value}")
    else:
        output.emit(fmt, ["ID", "Name", "State"], [(exp.id, exp.name, exp.state)], json_data=reply)
    if follow:
        sys.exit(follow_experiment(client, exp.id))
    if test_mode:
        sys.exit(watch_stages(client, exp.id))


@experiment.command("list")
@click.option("--state", "states", multiple=True, type=click.Choice([s.value for s in ExperimentState]),
              help="Only experiments in this state (repeatable: any of them).")
@click.option("--label", "labels", multiple=True, help="Only experiments with this label (repeatable: all of them).")
@click.option("--name", default=None, help="Only experiments whose name contains this text.")
@click.option("-a", "--all", "include_archived", is_flag=True, help="Archived experiments too.")
@click.option("--user", default=None, help="Only experiments this user owns.")
@click.option("--workspace", default=None, help="Only experiments in this workspace.")
@click.option("--project", default=None, help="Only experiments in this project (of --workspace).")
@click.option("--sort-by", type=click.Choice(get_args(SortBy)), default="id", show_default=True,
              help="The field to sort by (id: the order of creation).")
@click.option("--order-by", type=click.Choice(get_args(OrderBy)), default="desc", show_default=True,
              help="asc: smallest first; desc: largest (newest) first.")
@click.option("--limit", default=200, show_default=True, type=click.IntRange(1),
              help="The most experiments to list.")
@click.option("--offset", default=0, type=click.IntRange(0),
              help="Skip this many first (the next page: --offset 200).")
@format_options
@click.pass_context
def list_(ctx: click.Context, states: tuple[str, ...], labels: tuple[str, ...], name: str | None,
          include_archived: bool, user: str | None, workspace: str | None, project: str | None, sort_by: SortBy,
          order_by: OrderBy, limit: int, offset: int, fmt: output.Format) -> None:
    """List experiments, newest first, with their progress.

    Archived experiments only with --all. --state, --label, --name, --user, --workspace and --project keep only
    the matching ones; --sort-by and --order-by change the order, --limit and --offset page through them.
    `describe` shows one experiment with its trials; `project list-experiments` lists one project's."""
    if project is not None and workspace is None:
        raise InvalidRequest(f"--project {project} needs --workspace: project names are unique only in a workspace")
    data = client_of(ctx).list_experiments(
        limit=limit, offset=offset, states=list(states), labels=list(labels), name=name,
        include_archived=include_archived, owner=user, workspace=workspace, project=project, sort_by=sort_by,
        order_by=order_by)
    columns = ["ID", "Owner", "Name", "State", "Progress", "Trials", "Searcher", "Labels", "Workspace", "Project",
               "Created", "Ended"]
    if include_archived:
        columns.append("Archived")
    output.emit(fmt, columns, [
        (e.id, e.owner, e.name, e.state, _percent(e.progress), e.num_trials, e.searcher, ",".join(e.labels),
         where(e, "workspace"), where(e, "project"), output.when(e.created_at), output.when(e.ended_at),
         *((e.archived,) if include_archived else ()))
        for e in data.experiments], json_data=data)


def where(e: Experiment, field: str) -> str | None:
    """An experiment's workspace or project name, as the master sends it."""
    value = getattr(e, field, None)
    return value if isinstance(value, str) else None


@experiment.command("move")
@click.argument("exp_id", type=int)
@click.option("--project", "destination", required=True, metavar="WORKSPACE/PROJECT",
              help="The project to move it into, after its workspace: `--project team-a/baselines`.")
@click.pass_context
def move(ctx: click.Context, exp_id: int, destination: str) -> None:
    """Move an experiment into another project.

    --project names the destination as WORKSPACE/PROJECT (not an archived one). The roles of the destination's
    workspace then decide who may see and change experiment EXP_ID; its trials, checkpoints and logs stay as
    they are."""
    workspace_name, sep, project_name = destination.partition("/")
    if not sep or not workspace_name or not project_name or "/" in project_name:
        raise InvalidRequest(f"--project {destination!r}: expected WORKSPACE/PROJECT, such as Uncategorized/"
                             f"Uncategorized")
    client = client_of(ctx)
    target = client.project_by_name(workspace_name, project_name)
    client.move_experiment(exp_id, target.id)
    output.console.print(f"Moved experiment {exp_id} to project {target.name} of workspace {target.workspaceName}.")


def _percent(fraction: float | None) -> str:
    return "" if fraction is None else f"{fraction:.0%}"


@experiment.command("describe")
@click.argument("exp_id", type=int)
@click.option("--metrics", "with_metrics", is_flag=True,
              help="Also every trial's metrics, a row per step reported, with the checkpoint taken there.")
@format_options
@click.pass_context
def describe(ctx: click.Context, exp_id: int, with_metrics: bool, fmt: output.Format) -> None:
    """Show an experiment, its trials and why it failed.

    First the experiment (state, progress, searcher and metric, best validation, labels, notes, error), then a
    row per trial (state, steps, restarts, latest validation, hyperparameters, error); --metrics adds every metric
    each trial reported, a row per step. `list-trials` shows only the trial rows; `trial describe` shows one
    trial's runs and restarts."""
    client = client_of(ctx)
    d = client.get_experiment(exp_id)
    metrics = metric_table(client, [t.id for t in d.trials]) if with_metrics else None
    if fmt is output.Format.JSON:
        data = d.model_dump(mode="json", exclude_unset=True)
        return output.print_json(data if metrics is None else {**data, "metrics": metrics.points})
    e = d.experiment
    if fmt is output.Format.CSV:
        output.print_csv(["ID", "Name", "State", "Progress", "Searcher", "Metric", "Labels", "Archived", "Created",
                          "Ended", "Description", "Notes", "Error"],
                         [(e.id, e.name, e.state, _percent(e.progress), e.searcher, e.metric, ",".join(e.labels),
                           e.archived, output.when(e.created_at), output.when(e.ended_at), e.description, e.notes,
                           e.error_message)])
    else:
        output.table(["Field", "Value"], [
            ("ID", e.id), ("Name", e.name), ("State", e.state), ("Progress", _percent(e.progress)),
            ("Workspace", where(e, "workspace")), ("Project", where(e, "project")),
            ("Searcher", f"{e.searcher} (metric {e.metric}, smaller is better: {e.smaller_is_better})"),
            ("Labels", ", ".join(e.labels)), ("Archived", e.archived), ("Description", e.description),
            ("Notes", e.notes), ("Created", output.when(e.created_at)), ("Ended", output.when(e.ended_at)),
            ("Best validation", _best(e.best_validation)),
            ("Error", e.error_message),
            *(("Warning", w) for w in e.warnings or ()),
        ])
    _section(fmt)
    _trials_table(d.trials, fmt)
    if metrics is not None:
        _section(fmt)
        output.emit(fmt, metrics.columns, metrics.rows, title="Metrics")


def _section(fmt: output.Format) -> None:
    """A blank line between two CSV tables (a table has its own spacing)."""
    if fmt is output.Format.CSV:
        output.console.print()


def _best(best: BestValidation | None) -> str:
    if best is None:
        return ""
    value = f"{best.value:.6g}" if isinstance(best.value, (int, float)) else best.value
    return f"{best.metric}={value} (trial {best.trial_id}, steps {best.steps_completed})"


def _trials_table(trials: list[Trial], fmt: output.Format = output.Format.TABLE, json_data: object = None) -> None:
    output.emit(
        fmt, ["Trial", "State", "Steps", "Restarts", "Latest validation", "Hyperparameters", "Log policy", "Error"],
        [(t.id, t.state, t.steps_completed, t.restarts,
          output.short_metrics(t.latest_validation.metrics if t.latest_validation else None),
          output.short_metrics(t.hparams), t.log_policy_matched, t.error_message) for t in trials],
        json_data=json_data,
    )


def _action(name: ExperimentAction, verb: str) -> click.Command:
    @experiment.command(name, help=HELP[name])
    @click.argument("exp_id", type=int)
    @click.pass_context
    def cmd(ctx: click.Context, exp_id: int) -> None:
        e = client_of(ctx).experiment_action(exp_id, name).experiment
        archived = " (archived)" if e.archived else ""
        output.console.print(f"{verb.capitalize()} experiment {exp_id}; it is now {e.state.value}{archived}")

    return cmd


HELP: dict[ExperimentAction, str] = {
    "pause": "Pause an experiment: its trials checkpoint and stop.\n\n"
             "Each running trial is asked to save a checkpoint and exit (one still running after the config's "
             "preemption_timeout is killed, and later resumes from the checkpoint it had); no trial starts while "
             "it is PAUSED, and its slots go to other jobs. Only an ACTIVE experiment can be paused. `activate` "
             "resumes it; `cancel` and `kill` end it for good.",
    "activate": "Resume a paused experiment from its checkpoints.\n\n"
                "The experiment is ACTIVE again and its trials go back into the job queue; each trains on from its "
                "latest checkpoint when it gets slots. Only a PAUSED experiment (by `pause`, or created with "
                "--paused) can be activated; an ACTIVE one is left as it is. `unpause` is the same command.",
    "cancel": "End an experiment, letting its trials checkpoint.\n\n"
              "Each running trial is asked to save a checkpoint and exit, as for `pause`; trials not running end at "
              "once. The experiment is STOPPING_CANCELED until its last trial has exited, then CANCELED for good: "
              "it cannot be activated again (`continue` or `fork` build on its checkpoints). `kill` ends it at once "
              "instead, without the checkpoints; `pause` stops it for now.",
    "kill": "End an experiment at once, with no checkpoint.\n\n"
            "Each running trial's processes are killed (SIGKILL): what it trained since its latest checkpoint is "
            "lost. The experiment is STOPPING_KILLED until its trials have exited, then CANCELED, as after "
            "`cancel`. `cancel` lets each trial save a checkpoint first; kill is for trials that hang, or a cancel "
            "that takes too long (a kill hurries a cancel already under way).",
    "archive": "Hide an ended experiment from `e list`.\n\n"
               "Only a COMPLETED, CANCELED or ERROR experiment can be archived. Nothing is deleted: `e list --all` "
               "still lists it, `describe`, `logs` and the downloads still work, and `unarchive` brings it back. "
               "`delete` removes it and its checkpoints' files for good.",
    "unarchive": "Show an archived experiment in `e list` again.\n\n"
                 "The opposite of `archive`: the experiment is listed without --all again; nothing else about it "
                 "changes.",
}
ACTIONS: tuple[tuple[ExperimentAction, str], ...] = (
    ("pause", "paused"), ("activate", "activated"), ("cancel", "canceled"), ("kill", "killed"),
    ("archive", "archived"), ("unarchive", "unarchived"))
for _name, _verb in ACTIONS:
    _action(_name, _verb)


@experiment.command("wait")
@click.argument("exp_id", type=int)
@click.option("--polling-interval", default=5.0, show_default=True,
              help="Seconds between two looks at the experiment's state.")
@click.pass_context
def wait(ctx: click.Context, exp_id: int, polling_interval: float) -> None:
    """Wait for an experiment to end; exit 0 if it completed.

    It asks the master every --polling-interval seconds until experiment EXP_ID is COMPLETED, CANCELED or ERROR,
    prints how it ended, and exits 0 only if it COMPLETED (else 1), so a script can go on only after a success. It
    changes nothing; `create --follow` waits the same way while printing the first trial's logs."""
    client = client_of(ctx)
    while True:
        d = client.get_experiment(exp_id)
        state = d.experiment.state
        if state.terminal:
            break
        time.sleep(polling_interval)
    print_outcome(d)
    if state is not ExperimentState.COMPLETED:
        sys.exit(1)


@experiment.command("list-trials")
@click.argument("exp_id", type=int)
@format_options
@click.pass_context
def list_trials(ctx: click.Context, exp_id: int, fmt: output.Format) -> None:
    """List each trial's state, steps and latest validation.

    A row per trial of experiment EXP_ID: state, steps completed, restarts, latest validation metrics,
    hyperparameters and error, as `describe` shows them but without the experiment's own fields."""
    data = client_of(ctx).experiment_trials(exp_id)
    _trials_table(data.trials, fmt, data)


@experiment.command("list-checkpoints")
@click.argument("exp_id", type=int)
@format_options
@click.pass_context
def list_checkpoints(ctx: click.Context, exp_id: int, fmt: output.Format) -> None:
    """List the checkpoints an experiment's trials saved.

    A row per checkpoint of experiment EXP_ID: uuid, trial, steps, state, size and when it was reported. `download`
    fetches the best of them by metric; `checkpoint download UUID` fetches one, `checkpoint delete` removes one."""
    data = client_of(ctx).experiment_checkpoints(exp_id)
    output.emit(
        fmt, ["UUID", "Trial", "Steps", "State", "Size", "Reported"],
        [(c.uuid, c.trial_id, c.steps_completed, c.state, _size(c.resources), output.when(c.report_time))
         for c in data.checkpoints], json_data=data,
    )


def _size(resources: dict[str, int] | None) -> str:
    total = sum(int(v) for v in (resources or {}).values())
    return f"{total / 1024:.1f} KiB" if total < 1024 * 1024 else f"{total / 1024 / 1024:.1f} MiB"


@click.command("preview-search")
@click.argument("config_file")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VAL", help="Override a config key (dotted path).")
@format_options
@click.pass_context
def preview_search(ctx: click.Context, config_file: str, overrides: tuple[str, ...], fmt: output.Format) -> None:
    """Show the trials a search would create; run nothing.

    The master plays CONFIG_FILE's searcher (with each --config change) against a made-up metric and prints how
    many trials it would create and how far each would train. Its trials validate where min_validation_period puts
    validations, and it warns about each rung that falls between them. Nothing is stored or started; `e create`
    runs the search for real."""
    reply = client_of(ctx).preview_search(read_config_text(config_file, overrides))
    if fmt is not output.Format.TABLE:
        p = reply.preview
        return output.emit(fmt, ["Searcher", "Trials", "Unit"], [(p.searcher, p.total_trials, p.unit)],
                           json_data=reply)
    for w in reply.warnings:
        output.warn(w)
    output.console.print(reply.text)
