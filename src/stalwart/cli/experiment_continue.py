"""`stalwart e continue|fork`: train an ended experiment's trial further, or start a new experiment from an old one."""

from __future__ import annotations

import sys
from typing import Any

import click
import yaml

from stalwart.api.errors import InvalidRequest
from stalwart.cli import output
from stalwart.cli.base import client_of, format_options
from stalwart.cli.config_file import read_config_mapping
from stalwart.cli.experiment import submit
from stalwart.cli.follow import follow_experiment, last_log_id
from stalwart.config import apply_overrides, merge_defaults

overrides_option = click.option("--config", "overrides", multiple=True, metavar="KEY=VAL",
                                help="Override a config key (dotted path; repeatable).")
follow_option = click.option("-f", "--follow", "--follow-first-trial", "follow", is_flag=True,
                             help="Stream the trial's new log lines until the experiment ends; exit 0 only if it "
                                  "COMPLETED.")


def _overrides(config_file: str | None, overrides: tuple[str, ...]) -> dict[str, Any]:
    """The partial config `continue` sends: CONFIG_FILE's keys (if given), then each KEY=VAL."""
    base = read_config_mapping(config_file) if config_file else {}
    return apply_overrides(base, list(overrides))


@click.command("continue")
@click.argument("exp_id", type=int)
@click.option("--config-file", default=None, help="YAML file of config keys to change (a partial config).")
@overrides_option
@follow_option
@click.pass_context
def continue_(ctx: click.Context, exp_id: int, config_file: str | None, overrides: tuple[str, ...],
              follow: bool) -> None:
    """Train an ended single-trial experiment further.

    Experiment EXP_ID (COMPLETED, CANCELED or ERROR) becomes ACTIVE again, and its one trial
    trains on from its latest checkpoint with the config keys given changed (e.g. --config
    searcher.max_length=200, or --config max_restarts=5 after a failure); keys that cannot change are refused by
    name. `fork` starts a new experiment from scratch instead, for any search; `activate` resumes a paused one."""
    changes = _overrides(config_file, overrides)
    client = client_of(ctx)
    trials = client.experiment_trials(exp_id).trials
    after = last_log_id(client, trials[0].id) if follow and trials else 0
    exp = client.continue_experiment(exp_id, changes).experiment
    output.console.print(f"Continued experiment {exp_id}; it is now {exp.state.value}.")
    if follow:
        sys.exit(follow_experiment(client, exp_id, after_id=after))


@click.command("fork")
@click.argument("exp_id", type=int)
@click.argument("config_file", required=False)
@overrides_option
@click.option("--paused", is_flag=True, help="Create the new experiment without starting it.")
@follow_option
@format_options
@click.pass_context
def fork(ctx: click.Context, exp_id: int, config_file: str | None, overrides: tuple[str, ...], paused: bool,
         follow: bool, fmt: output.Format) -> None:
    """Copy an experiment's config and code into a new one.

    The new experiment gets experiment EXP_ID's code and config, with CONFIG_FILE's keys (if given) in place of the
    old ones, then each --config KEY=VAL; its trials start from scratch (it is created paused with --paused). The
    old experiment is unchanged. `continue` instead trains a finished single-trial experiment's own trial further
    from its checkpoint."""
    if follow and paused:
        raise InvalidRequest("--follow and --paused cannot be used together")
    client = client_of(ctx)
    config = client.get_experiment(exp_id).config
    if config_file:
        config = merge_defaults(read_config_mapping(config_file), config)
    config = apply_overrides(config, list(overrides))
    context = client.experiment_model_def(exp_id).b64Tgz
    reply, exp = submit(client, yaml.safe_dump(config, sort_keys=False), context, paused=paused, parent_id=exp_id)
    if fmt is output.Format.TABLE:
        output.console.print(f"Forked experiment {exp.id} ({exp.name}) from experiment {exp_id}, state "
                             f"{exp.state.value}")
    else:
        output.emit(fmt, ["ID", "Name", "State", "Forked from"], [(exp.id, exp.name, exp.state, exp_id)],
                    json_data=reply)
    if follow:
        sys.exit(follow_experiment(client, exp.id))
