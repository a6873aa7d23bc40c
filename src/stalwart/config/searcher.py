"""The `searcher` section: one table of fields per searcher name, cross-field rules, and its typed settings.

This is the one place where a searcher's fields are checked and defaulted: `check_searcher` at
experiment create, and `searcher_settings`, which gives the searchers their typed settings (the
same checks on a stored config always pass, so a search restored after a restart never fails here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config._schema import (
    Field,
    Problems,
    boolean,
    check_section,
    choice,
    integer,
    is_int,
    list_of,
    number,
    string,
    subsection,
    type_name,
)
from stalwart.config.hyperparameters import iter_leaves, leaf_type
from stalwart.config.lengths import check_length, length_checker
from stalwart.config.searcher_settings import SearcherSettings, settings_of

SEARCHER_NAMES = ("single", "random", "grid", "adaptive_asha", "async_halving", "asha_promotion", "hyperband",
                  "pbt", "optuna", "custom")
# Names Determined only parses; their extra fields are kept as given, unchecked.
EOL_SEARCHER_NAMES = ("adaptive", "adaptive_simple", "sync_halving")
# Names that produce an end-of-life warning when used.
WARN_SEARCHER_NAMES = frozenset(EOL_SEARCHER_NAMES)

_COMMON: dict[str, Field] = {
    "name": Field(string()),
    "metric": Field(string(nonempty=True), required=True),
    "smaller_is_better": Field(boolean(), default=True),
    "source_trial_id": Field(integer(minimum=0)),
    "source_checkpoint_uuid": Field(string(nonempty=True)),
}
_MAX_LENGTH = {"max_length": Field(length_checker(allow_bare_int=True))}
_TIME = {"time_metric": Field(string(nonempty=True)), "max_time": Field(integer(minimum=1))}
_MAX_TRIALS = {"max_trials": Field(integer(minimum=1), required=True)}
_CONCURRENCY = {"max_concurrent_trials": Field(integer(minimum=0), default=16)}
_HALVING = {
    "divisor": Field(number(exclusive_min=1), default=4),
    # null unless set: 0.38 ASHA is stop-based; an explicit `false` asks for 0.37's promotions
    "stop_once": Field(boolean()),
}
# where new trials' hyperparameters come from: random draws (Determined's), Optuna's TPE fed with rung results,
# or mutations of the trials with the best rung results (evolution)
_HALVING_SAMPLER = {"sampler": Field(choice("random", "tpe", "evolution"), default="random")}
_ASHA = {
    **_MAX_TRIALS,
    **_HALVING_SAMPLER,
    "mode": Field(choice("standard", "aggressive", "conservative"), default="standard"),
    "max_rungs": Field(integer(minimum=1), default=5),
    "bracket_rungs": Field(list_of(integer(minimum=1)), default=list),
    **_HALVING,
    **_CONCURRENCY,
    **_TIME,
    **_MAX_LENGTH,
}
_PBT_REPLACE = {"truncate_fraction": Field(number(minimum=0, maximum=0.5), default=0.2)}
_PBT_EXPLORE = {
    "resample_probability": Field(number(minimum=0, maximum=1), default=0.2),
    "perturb_factor": Field(number(minimum=0, maximum=1), default=0.2),
}


def _round_length(value: Any, path: str, problems: Problems) -> Any:
    """PBT's `length_per_round`: an integer >= 1, or a length such as `{batches: 100}` of at least 1."""
    if is_int(value):
        if value < 1:
            problems.add(path, f"expected an integer >= 1 or a length, got {value}")
        return value
    if not isinstance(value, Mapping):
        problems.add(path, f"expected an integer >= 1 or a length, got {type_name(value)}")
        return value
    found = Problems()
    checked = check_length(value, path, found)
    problems.details += found.details
    if not found:
        ((unit, amount),) = checked.items()
        if amount < 1:
            problems.add(f"{path}.{unit}", f"expected an integer >= 1, got {amount}")
    return checked


_VARIANTS: dict[str, dict[str, Field]] = {
    "single": {**_MAX_LENGTH, **_TIME},
    "random": {**_MAX_TRIALS, **_CONCURRENCY, **_MAX_LENGTH},
    "grid": {**_CONCURRENCY, **_MAX_LENGTH},
    "adaptive_asha": _ASHA,
    "asha_promotion": _ASHA,
    "hyperband": {
        "max_trials": Field(integer(minimum=1)),
        "divisor": Field(number(exclusive_min=1), default=3),
        "max_rungs": Field(integer(minimum=1), default=5),
        **_CONCURRENCY,
        **_TIME,
        **_MAX_LENGTH,
    },
    "pbt": {
        "population_size": Field(integer(minimum=1), required=True),
        "num_rounds": Field(integer(minimum=1), required=True),
        "length_per_round": Field(_round_length, required=True),
        "time_metric": Field(string(nonempty=True)),
        "replace_function": subsection(_PBT_REPLACE),
        "explore_function": subsection(_PBT_EXPLORE),
    },
    "optuna": {
        **_MAX_TRIALS,
        "sampler": Field(choice("tpe", "random", "cmaes"), default="tpe"),
        **_CONCURRENCY,
        **_TIME,
        **_MAX_LENGTH,
    },
    "async_halving": {
        "num_rungs": Field(integer(minimum=1), required=True),
        **_MAX_TRIALS,
        **_HALVING_SAMPLER,
        **_HALVING,
        **_CONCURRENCY,
        **_TIME,
        **_MAX_LENGTH,
    },
    "custom": {
        "unit": Field(choice("batches", "records", "epochs"), default="batches"),
        "search_method": Field(string(nonempty=True)),
        **_TIME,
        **_MAX_LENGTH,
    },
}

# Searchers whose algorithm needs a length: time_metric + max_time, or the legacy max_length.
_NEEDS_LENGTH = ("adaptive_asha", "async_halving", "asha_promotion", "hyperband")


def check_searcher(value: Any, path: str, problems: Problems) -> dict[str, Any]:
    """Validate the searcher; return it with every field of its variant present."""
    if not isinstance(value, Mapping):
        problems.add(path, f"expected a mapping, got {type_name(value)}")
        return {}
    name = value.get("name")
    if name is None:
        problems.add(f"{path}.name", "required")
        return check_section(value, path, _COMMON, problems, strict=False)
    if name in EOL_SEARCHER_NAMES:
        return check_section(value, path, _COMMON, problems, strict=False)
    if name not in _VARIANTS:
        names = ", ".join(SEARCHER_NAMES + EOL_SEARCHER_NAMES)
        problems.add(f"{path}.name", f"expected one of {names}, got {type_name(name)}")
        return check_section(value, path, _COMMON, problems, strict=False)
    searcher = check_section(value, path, {**_COMMON, **_VARIANTS[name]}, problems)
    _check_cross_fields(searcher, value, path, problems)
    return searcher


def _check_cross_fields(searcher: dict[str, Any], raw: Mapping[str, Any], path: str, problems: Problems) -> None:
    if searcher.get("source_trial_id") is not None and searcher.get("source_checkpoint_uuid"):
        problems.add(path, "give at most one of source_trial_id and source_checkpoint_uuid")
    has_metric = searcher.get("time_metric") is not None
    has_time = searcher.get("max_time") is not None
    if has_time and not has_metric:
        problems.add(f"{path}.time_metric", "required when max_time is set")
    if has_metric and not has_time and "max_time" in _VARIANTS.get(searcher["name"], {}):
        problems.add(f"{path}.max_time", "required when time_metric is set")
    name = searcher["name"]
    if name in _NEEDS_LENGTH and not (has_metric or has_time or searcher.get("max_length")):
        problems.add(path, f"{name} needs time_metric and max_time (or the legacy max_length)")
    elif name in _NEEDS_LENGTH and not has_time:
        _check_positive_length(searcher.get("max_length"), raw.get("max_length"), f"{path}.max_length", problems)


def _check_positive_length(checked: Any, given: Any, path: str, problems: Problems) -> None:
    """The rungs of a halving searcher need a length of at least 1 (a checked `{unit: n}`)."""
    if not isinstance(checked, Mapping) or len(checked) != 1:
        return
    ((unit, amount),) = checked.items()
    if is_int(amount) and amount == 0:  # negative amounts are refused by the length checker
        where = path if is_int(given) else f"{path}.{unit}"
        problems.add(where, f"expected an integer >= 1, got {amount}")


def searcher_settings(config: Mapping[str, Any]) -> SearcherSettings:
    """The typed settings of an experiment config's searcher, as the searchers take them.

    Runs the same checks as experiment create (on a stored config they pass), so a bad or
    unvalidated config is a ConfigError naming each field by its dotted path. End-of-life names
    parse, but no experiment can run them.
    """
    problems = Problems()
    section = check_searcher(config.get("searcher"), "searcher", problems)
    hparams = config.get("hyperparameters")
    if isinstance(hparams, Mapping) and section:
        check_searcher_hparams(section, hparams, problems)
    if problems:
        count = len(problems)
        message = problems.details[0] if count == 1 else f"invalid searcher config ({count} problems)"
        raise ConfigError(message, details=problems.details)
    settings = settings_of(section)
    if settings is None:
        detail = (f"searcher.name: '{section.get('name')}' is end-of-life in Determined and cannot run; "
                  f"use one of {', '.join(SEARCHER_NAMES)}")
        raise ConfigError(detail, details=[detail])
    return settings


def check_searcher_hparams(searcher: Mapping[str, Any], hparams: Mapping[str, Any], problems: Problems) -> None:
    """Rules joining the searcher and the hyperparameters (grid: counts).

    `single` takes any hyperparameters: as in Determined, it samples the non-const ones once.
    """
    name = searcher.get("name")
    if name == "grid":
        for where, spec in iter_leaves(hparams):
            if leaf_type(spec) in ("int", "double", "log") and spec.get("count") is None:
                problems.add(f"{where}.count", "required for the grid searcher")
