"""`stalwart experiment|e ...`: create (with --follow), list, describe, pause/activate/cancel/kill, wait, trials,
checkpoints."""

from __future__ import annotations

import base64
import pathlib
import sys
import time

import click
import yaml

from stalwart.api.errors import ConfigError, InvalidRequest, StalwartError
from stalwart.api.models.experiments import BestValidation, ExperimentDetail
from stalwart.api.models.trials import Trial
from stalwart.api.states import ExperimentState
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, json_option
from stalwart.cli.follow import follow_trial_logs, wait_for_first_trial
from stalwart.cli.test_mode import run_local, watch_stages
from stalwart.client import Client
from stalwart.client.experiments import ExperimentAction
from stalwart.config import apply_overrides
from stalwart.config.test_mode import test_mode_config
from stalwart.context import pack_context


@click.group("experiment", cls=AliasedGroup, aliases={"ls": "list", "lt": "list-trials", "lc": "list-checkpoints",
                                                       "unpause": "activate"})
def experiment() -> None:
    """Create and manage experiments."""


def _read_config(path: str, overrides: tuple[str, ...]) -> str:
    p = pathlib.Path(path)
    if not p.is_file():
        raise InvalidRequest(f"config file '{path}' does not exist (give the path to the experiment YAML)")
    text = p.read_text()
    if overrides:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: malformed YAML: {err}") from None
        text = yaml.safe_dump(apply_overrides(data, list(overrides)), sort_keys=False)
    return text


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
@json_option
@click.pass_context
def create(ctx, config_file, context_dir, includes, overrides, follow, paused, test_mode, local, as_json) -> None:
    """Create an experiment from CONFIG_FILE with the code in CONTEXT_DIR."""
    if sum(map(bool, (follow, paused, test_mode))) > 1:
        raise InvalidRequest("--follow, --paused and --test-mode cannot be used together")
    if local and not test_mode:
        raise InvalidRequest("--local needs --test-mode")
    text = _read_config(config_file, overrides)
    if test_mode:
        config = test_mode_config(text)
        if local:
            sys.exit(run_local(config, context_dir))
        text = yaml.safe_dump(config, sort_keys=False)
    packed = pack_context(context_dir, includes)
    for w in packed.warnings:
        output.warn(w)
    client = client_of(ctx)
    reply = client.create_experiment(text, base64.b64encode(packed.data).decode(), activate=not paused)
    for w in reply.warnings:
        output.warn(w)
    exp = reply.experiment
    if exp is None:
        raise StalwartError("the master created no experiment (it answered as to a validate-only request)")
    if as_json:
        output.print_json(reply)
    else:
        output.console.print(f"Created experiment {exp.id} ({exp.name}), state {exp.state.value}")
    if follow:
        sys.exit(_follow(client, exp.id))
    if test_mode:
        sys.exit(watch_stages(client, exp.id))


def _follow(client: Client, exp_id: int) -> int:
    trial_id = wait_for_first_trial(client, exp_id)
    if trial_id is not None:
        follow_trial_logs(client, trial_id)
    while True:
        d = client.get_experiment(exp_id)
        if d.experiment.state.terminal:
            break
        time.sleep(0.5)
    _print_outcome(d)
    return 0 if d.experiment.state is ExperimentState.COMPLETED else 1


def _print_outcome(d: ExperimentDetail) -> None:
    exp = d.experiment
    output.console.print(f"Experiment {exp.id} ended {exp.state.value}.")
    if exp.error_message:
        output.console.print(f"Reason: {exp.error_message}")
    for tr in d.trials:
        val = tr.latest_validation
        if val:
            output.console.print(f"Trial {tr.id} final validation (steps {val.steps_completed}): "
                                 f"{output.short_metrics(val.metrics, limit=20)}")


@experiment.command("list")
@click.option("--limit", default=200, show_default=True)
@click.option("--offset", default=0)
@json_option
@click.pass_context
def list_(ctx, limit, offset, as_json) -> None:
    """List experiments, newest first."""
    data = client_of(ctx).list_experiments(limit=limit, offset=offset)
    if as_json:
        return output.print_json(data)
    output.table(
        ["ID", "Name", "State", "Progress", "Trials", "Searcher", "Labels", "Created"],
        [(e.id, e.name, e.state, _percent(e.progress), e.num_trials, e.searcher, ",".join(e.labels),
          output.when(e.created_at)) for e in data.experiments],
    )


def _percent(fraction: float | None) -> str:
    return "" if fraction is None else f"{fraction:.0%}"


@experiment.command("describe")
@click.argument("exp_id", type=int)
@json_option
@click.pass_context
def describe(ctx, exp_id, as_json) -> None:
    """Show an experiment, its trials and, if it failed, why."""
    d = client_of(ctx).get_experiment(exp_id)
    if as_json:
        return output.print_json(d)
    e = d.experiment
    output.table(["Field", "Value"], [
        ("ID", e.id), ("Name", e.name), ("State", e.state), ("Progress", _percent(e.progress)),
        ("Searcher", f"{e.searcher} (metric {e.metric}, smaller is better: {e.smaller_is_better})"),
        ("Labels", ", ".join(e.labels)), ("Description", e.description),
        ("Created", output.when(e.created_at)), ("Ended", output.when(e.ended_at)),
        ("Best validation", _best(e.best_validation)),
        ("Error", e.error_message),
        *(("Warning", w) for w in e.warnings or ()),
    ])
    _trials_table(d.trials)


def _best(best: BestValidation | None) -> str:
    if best is None:
        return ""
    value = f"{best.value:.6g}" if isinstance(best.value, (int, float)) else best.value
    return f"{best.metric}={value} (trial {best.trial_id}, steps {best.steps_completed})"


def _trials_table(trials: list[Trial]) -> None:
    output.table(
        ["Trial", "State", "Steps", "Restarts", "Latest validation", "Hyperparameters", "Error"],
        [(t.id, t.state, t.steps_completed, t.restarts,
          output.short_metrics(t.latest_validation.metrics if t.latest_validation else None),
          output.short_metrics(t.hparams), t.error_message) for t in trials],
    )


def _action(name: ExperimentAction, verb: str) -> click.Command:
    @experiment.command(name)
    @click.argument("exp_id", type=int)
    @click.pass_context
    def cmd(ctx, exp_id) -> None:
        e = client_of(ctx).experiment_action(exp_id, name).experiment
        output.console.print(f"{verb} experiment {exp_id}; it is now {e.state.value}")

    cmd.__doc__ = f"{verb.capitalize()} an experiment."
    return cmd


ACTIONS: tuple[tuple[ExperimentAction, str], ...] = (
    ("pause", "paused"), ("activate", "activated"), ("cancel", "canceled"), ("kill", "killed"))
for _name, _verb in ACTIONS:
    _action(_name, _verb)


@experiment.command("wait")
@click.argument("exp_id", type=int)
@click.option("--polling-interval", default=5.0, show_default=True)
@click.pass_context
def wait(ctx, exp_id, polling_interval) -> None:
    """Wait until the experiment ends; exit code 0 only if it COMPLETED."""
    client = client_of(ctx)
    while True:
        d = client.get_experiment(exp_id)
        state = d.experiment.state
        if state.terminal:
            break
        time.sleep(polling_interval)
    _print_outcome(d)
    if state is not ExperimentState.COMPLETED:
        sys.exit(1)


@experiment.command("list-trials")
@click.argument("exp_id", type=int)
@json_option
@click.pass_context
def list_trials(ctx, exp_id, as_json) -> None:
    """List the trials of an experiment."""
    data = client_of(ctx).experiment_trials(exp_id)
    if as_json:
        return output.print_json(data)
    _trials_table(data.trials)


@experiment.command("list-checkpoints")
@click.argument("exp_id", type=int)
@json_option
@click.pass_context
def list_checkpoints(ctx, exp_id, as_json) -> None:
    """List the checkpoints of an experiment."""
    data = client_of(ctx).experiment_checkpoints(exp_id)
    if as_json:
        return output.print_json(data)
    output.table(
        ["UUID", "Trial", "Steps", "State", "Size", "Reported"],
        [(c.uuid, c.trial_id, c.steps_completed, c.state, _size(c.resources), output.when(c.report_time))
         for c in data.checkpoints],
    )


def _size(resources: dict[str, int] | None) -> str:
    total = sum(int(v) for v in (resources or {}).values())
    return f"{total / 1024:.1f} KiB" if total < 1024 * 1024 else f"{total / 1024 / 1024:.1f} MiB"


__all__ = ["experiment", "StalwartError"]


@click.command("preview-search")
@click.argument("config_file")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VAL", help="Override a config key (dotted path).")
@json_option
@click.pass_context
def preview_search(ctx, config_file, overrides, as_json) -> None:
    """Show the trials and lengths a search would create, without running anything."""
    reply = client_of(ctx).preview_search(_read_config(config_file, overrides))
    if as_json:
        return output.print_json(reply)
    for w in reply.warnings:
        output.warn(w)
    output.console.print(reply.text)
