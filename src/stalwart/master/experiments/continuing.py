"""Continuing a finished experiment (Determined 0.38's `e continue`): its one trial trains further.

Only a single-trial experiment in a terminal state (COMPLETED, CANCELED, ERROR) continues, and not once the
checkpoints its trial trained are all deleted (it would train the same steps again). The overrides are merged
over the stored config and the result is checked as a create checks a config (a bad value is a 400 naming its
dotted path); the hyperparameters and the searcher's name cannot change. The same trial then gets a new run from
its latest checkpoint, training to the searcher's new length (its steps continue: nothing is trained twice), with
its restarts counted afresh, and the experiment is ACTIVE again.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from stalwart.api.errors import ConfigError, InvalidRequest, InvalidStateError
from stalwart.api.states import ExperimentState as S
from stalwart.config import secrets
from stalwart.config.container_policy import require_allowed
from stalwart.master.experiments import experiments, searchers, searching, trials as trial_machine
from stalwart.master.logs import master_line
from stalwart.master.queries import (
    checkpoints as checkpoint_rows,
    experiments as experiment_rows,
    jobs as job_rows,
    trials as trial_rows,
)
from stalwart.master.service import Master
from stalwart.searcher.random_search import PoolSearch

POOL_SEARCHERS = ("single", "random", "grid")
"""Searchers whose one trial can train further (their saved state is a pool of trials, see searcher.random_search)."""
FIXED = ("hyperparameters", "searcher.name")
"""What a continue may not change: the trial keeps its hyperparameters, the experiment its kind of search."""


def merged_config(stored: dict[str, Any], overrides: dict[str, Any], path: str = "") -> dict[str, Any]:
    """`overrides` over `stored`: nested objects merge key by key, any other value replaces the stored one."""
    out = copy.deepcopy(stored)
    for key, value in overrides.items():
        if not isinstance(key, str) or not key:
            raise InvalidRequest(f"overrides{'.' + path if path else ''}: keys must be non-empty strings")
        here = f"{path}.{key}" if path else key
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged_config(out[key], value, here)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _lookup(config: dict[str, Any], dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def continue_experiment(m: Master, exp_id: int, overrides: dict[str, Any]) -> None:
    """Check everything first, then reopen the experiment and its trial in one transaction."""
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        trials = trial_rows.of_experiment(conn, exp_id)
        archive = experiment_rows.context_archive(conn, exp_id) or b""
        pool = job_rows.pool_of(conn, job_rows.EXPERIMENT, exp_id)
        lost = len(trials) == 1 and trial_machine.latest_checkpoint(conn, trials[0]["id"]) is None \
            and bool(checkpoint_rows.of_trial(conn, trials[0]["id"]))
    state = S(exp["state"])
    if not state.terminal:
        raise InvalidStateError(f"experiment {exp_id} is {state.value}; only a finished experiment (COMPLETED, "
                                "CANCELED or ERROR) can be continued")
    if len(trials) != 1:
        raise InvalidStateError(f"experiment {exp_id} has {len(trials)} trials; only a single-trial experiment "
                                "can be continued")
    if lost:
        raise InvalidStateError(f"trial {trials[0]['id']} of experiment {exp_id} has no checkpoint left to continue "
                                "from (they were deleted); it would train its steps again")
    stored = exp["config"]
    if stored["searcher"]["name"] not in POOL_SEARCHERS:
        raise InvalidRequest(f"experiment {exp_id} uses the '{stored['searcher']['name']}' searcher; only a "
                             f"single-trial search ({', '.join(POOL_SEARCHERS)}) can be continued")
    config = merged_config(stored, overrides)
    for dotted in FIXED:
        if _lookup(config, dotted) != _lookup(stored, dotted):
            raise InvalidRequest(f"overrides.{dotted}: cannot change when an experiment continues; "
                                 "create a new experiment instead")
    checked, config_text = _checked(m, exp_id, config, stored, archive, pool)
    search = checked.search
    if not isinstance(search, PoolSearch) or exp["searcher_state"] is None:
        searchers.discard(search)
        raise InvalidRequest(f"experiment {exp_id}: its '{stored['searcher']['name']}' searcher has no saved state "
                             "to continue from")
    trial = trials[0]
    snapshot = copy.deepcopy(exp["searcher_state"])
    snapshot["state"] = {**snapshot["state"], "live": [trial["request_id"]], "closed": 0, "errored": 0,
                         "shutdown": False, "started": True, "created": 1}
    try:
        search.restore(snapshot)
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"experiment {exp_id}: its searcher's saved state cannot be continued ({err})") from None
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        if not S(exp["state"]).terminal:
            raise InvalidStateError(f"experiment {exp_id} is {exp['state']}; it was continued meanwhile")
        experiment_rows.reopen(conn, exp_id, config=checked.config, config_text=config_text)
        m.log_policy_cache.pop(exp_id, None)  # its log policies as the new config gives them (log_policies.py)
        trial_rows.reopen(conn, trial["id"], target_length=search.length)
        master_line(conn, trial["id"], f"experiment {exp_id} continued: the trial resumes from its latest checkpoint "
                    f"and trains to {search.length} {_unit(checked.config)}")
        experiment_rows.save_search(conn, exp_id, search.snapshot(), 0.0)
        searching.refresh_progress(m, conn, exp_id)
    m.wake_scheduler()


def _checked(m: Master, exp_id: int, config: dict[str, Any], stored: dict[str, Any], archive: bytes,
             pool: str | None) -> tuple[experiments.NewExperiment, str]:
    """The continued config checked as a create checks one (a hidden secret given as the placeholder keeps the
    stored value; the pool it runs in must allow what it asks of its container), and its text to keep (no secret
    in it)."""
    config_text = yaml.safe_dump(config, sort_keys=False)
    checked = experiments.check_experiment(m, config_text, archive, parent=(f"experiment {exp_id}", stored))
    try:
        require_allowed(checked.config, m.settings.cluster.container_policy(pool or checked.pool))
    except ConfigError:
        searchers.discard(checked.search)
        raise
    return checked, secrets.redact_text(config_text, checked.config)


def _unit(config: dict[str, Any]) -> str:
    length = config.get("searcher", {}).get("max_length")
    return next(iter(length)) if isinstance(length, dict) and length else "batches"
