"""Build the search method an expanded experiment config asks for.

| searcher.name | class | module |
|---|---|---|
| single | SingleSearch | single |
| random | RandomSearch | random_search |
| grid | GridSearch | grid |
| async_halving | Tournament of one stop-based Bracket | asha |
| adaptive_asha | Tournament of stop-based Brackets (`sampler: tpe` / `evolution`: fed by an OptunaModel / EvolutionModel) | asha |
| asha_promotion (or adaptive_asha / async_halving with `stop_once: false` set) | Tournament of PromotionBrackets | asha_promotion |
| hyperband | HyperbandSearch | hyperband |
| pbt | PBTSearch | pbt |
| optuna | OptunaSearch (needs the optional optuna package) | optuna_search |
| custom | CustomSearch(user_method, config) | custom |

`stop_once: false` selects promotions only when it is set in the config: the config package must
leave `stop_once` null when it is absent (0.38 ASHA is stop-based).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config import views
from stalwart.searcher import asha
from stalwart.searcher._common import (
    MetricReader,
    budget,
    float_field,
    int_field,
    required_budget,
    searcher_section,
)
from stalwart.searcher.asha_promotion import PromotionBracket
from stalwart.searcher.base import SearchMethod
from stalwart.searcher.grid import GridSearch
from stalwart.searcher.hyperband import HyperbandSearch
from stalwart.searcher.pbt import PBTSearch
from stalwart.searcher.random_search import RandomSearch
from stalwart.searcher.single import SingleSearch
from stalwart.searcher.space import HParamSpace

SUPPORTED = ("single", "random", "grid", "adaptive_asha", "async_halving", "asha_promotion", "hyperband",
             "pbt", "optuna", "custom")


def _trial_length(config: Mapping) -> int | None:
    total, _ = budget(config)
    return None if total is None else int(total)


def _problem(message: str, detail: str | None = None) -> ConfigError:
    return ConfigError(message, details=[detail or message])


def _check_single_hparams(space: HParamSpace) -> None:
    bad = [leaf for leaf in space.leaves if leaf.kind != "const"]
    if bad:
        raise ConfigError(
            "the single searcher needs const hyperparameters",
            details=[f"{leaf.where}: the single searcher needs a const value, got type '{leaf.kind}'" for leaf in bad],
        )


def _halving_fields(searcher: Mapping) -> None:
    int_field(searcher, "max_trials", minimum=1, required=True)
    int_field(searcher, "max_concurrent_trials", 16, minimum=0)
    float_field(searcher, "divisor", 4.0, exclusive_min=1.0)


def make_search_method(config: Mapping, *, custom_method: Any = None) -> SearchMethod:
    """The searcher for an expanded config. `custom_method`: the user's object for `custom`."""
    searcher = searcher_section(config)
    name = searcher.get("name")
    seed = views.experiment_seed(config)
    space = HParamSpace(config.get("hyperparameters") or {})
    if name == "single":
        _check_single_hparams(space)
        return SingleSearch(space, seed, _trial_length(config))
    if name == "random":
        return RandomSearch(space, seed, int_field(searcher, "max_trials", minimum=1, required=True),
                            int_field(searcher, "max_concurrent_trials", 16, minimum=0), _trial_length(config))
    if name == "grid":
        return GridSearch(space, seed, int_field(searcher, "max_concurrent_trials", 16, minimum=0),
                          _trial_length(config))
    if name in ("adaptive_asha", "async_halving", "asha_promotion"):
        _halving_fields(searcher)
        total, time_metric = required_budget(config, name)
        promotion = name == "asha_promotion" or searcher.get("stop_once") is False
        bracket_cls = PromotionBracket if promotion else asha.Bracket
        if name == "async_halving":
            return asha.async_halving(config, space, total, time_metric, seed, bracket_cls)
        return asha.adaptive_asha(config, space, total, time_metric, seed, bracket_cls)
    if name == "hyperband":
        total, time_metric = required_budget(config, name)
        return HyperbandSearch(
            space, seed, MetricReader.from_config(config, time_metric), total=total,
            divisor=float_field(searcher, "divisor", 3.0, exclusive_min=1.0),
            max_rungs=int_field(searcher, "max_rungs", 5, minimum=1),
            max_trials=int_field(searcher, "max_trials", None, minimum=1),
            max_concurrent=int_field(searcher, "max_concurrent_trials", 16, minimum=0),
        )
    if name == "pbt":
        return _pbt(config, searcher, space, seed)
    if name == "optuna":
        from stalwart.searcher.optuna_search import OptunaSearch

        _, time_metric = budget(config)
        return OptunaSearch(
            space, seed, MetricReader.from_config(config, time_metric),
            max_trials=int_field(searcher, "max_trials", minimum=1, required=True),
            max_concurrent=int_field(searcher, "max_concurrent_trials", 16, minimum=0),
            length=_trial_length(config), sampler=str(searcher.get("sampler") or "tpe"),
        )
    if name == "custom":
        if custom_method is None:
            raise _problem(
                "searcher.name: 'custom' needs the user's search method object",
                "searcher.name: the master builds CustomSearch(user_method, config) with the class from the context",
            )
        from stalwart.searcher.custom import CustomSearch

        return CustomSearch(custom_method, config)
    raise _problem(
        f"searcher.name: '{name}' is not supported",
        f"searcher.name: expected one of {', '.join(SUPPORTED)}, got {name!r}",
    )


def _pbt(config: Mapping, searcher: Mapping, space: HParamSpace, seed: int | None) -> PBTSearch:
    raw_length = searcher.get("length_per_round")
    time_metric = searcher.get("time_metric")
    if isinstance(raw_length, Mapping) and len(raw_length) == 1:
        ((unit, value),) = raw_length.items()
        time_metric = time_metric or unit
        raw_length = value
    if isinstance(raw_length, bool) or not isinstance(raw_length, int) or raw_length < 1:
        raise _problem("searcher.length_per_round: required, an integer >= 1 (or a length such as {batches: 100})")
    replace = searcher.get("replace_function") or {}
    explore = searcher.get("explore_function") or {}
    if not isinstance(replace, Mapping) or not isinstance(explore, Mapping):
        raise _problem("searcher.replace_function and searcher.explore_function must be mappings")
    truncate = float_field(replace, "truncate_fraction", 0.2, minimum=0.0, maximum=0.5)
    resample = float_field(explore, "resample_probability", 0.2, minimum=0.0, maximum=1.0)
    perturb = float_field(explore, "perturb_factor", 0.2, minimum=0.0, maximum=1.0)
    return PBTSearch(
        space, seed, MetricReader.from_config(config, str(time_metric or "batches")),
        population_size=int_field(searcher, "population_size", minimum=1, required=True),
        num_rounds=int_field(searcher, "num_rounds", minimum=1, required=True),
        length_per_round=raw_length, truncate_fraction=truncate, resample_probability=resample,
        perturb_factor=perturb,
    )
