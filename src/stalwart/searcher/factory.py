"""Build the search method for the typed searcher settings the config package produced.

| settings (searcher.name) | class | module |
|---|---|---|
| SingleSettings (single) | SingleSearch | single |
| RandomSettings (random) | RandomSearch | random_search |
| GridSettings (grid) | GridSearch | grid |
| AsyncHalvingSettings (async_halving) | Tournament of one stop-based Bracket | asha |
| AdaptiveAshaSettings (adaptive_asha) | Tournament of stop-based Brackets (*) | asha |
| AshaPromotionSettings or halving settings with `stop_once: false` | Tournament of PromotionBrackets | asha_promotion |
| HyperbandSettings (hyperband) | HyperbandSearch | hyperband |
| PBTSettings (pbt) | PBTSearch | pbt |
| OptunaSettings (optuna) | OptunaSearch (needs the optional optuna package) | optuna_search |
| CustomSettings (custom) | CustomSearch(user_method, config) | custom |

(*) with `sampler: tpe` or `evolution`, fed by an OptunaModel or an EvolutionModel.

The settings are taken as they are: every field was checked and defaulted by
`stalwart.config.searcher`, so nothing here validates or defaults a field. The only errors raised
here are about the machine (a missing optional package) or the caller (no user object for `custom`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config import (
    ExpandedConfig,
    SearcherSettings,
    TrialLength,
    searcher_settings,
    views,
)
from stalwart.config.searcher_settings import (
    AdaptiveAshaSettings,
    AsyncHalvingSettings,
    CustomSettings,
    GridSettings,
    HyperbandSettings,
    OptunaSettings,
    PBTSettings,
    RandomSettings,
    SingleSettings,
)
from stalwart.searcher import asha
from stalwart.searcher._common import MetricReader
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


def make_search_method(config: Mapping[str, Any] | ExpandedConfig, *, custom_method: Any = None) -> SearchMethod:
    """The searcher for an experiment config: `load_experiment_config`'s result (its typed settings are used
    as they are), or an expanded config as stored (the config package gives its typed settings).

    `custom_method`: the user's object for `custom`. The searcher's `settings` is the typed object it was
    built from.
    """
    if isinstance(config, ExpandedConfig):
        raw: Mapping[str, Any] = config.config
        settings = config.searcher if config.searcher is not None else searcher_settings(raw)
    else:
        raw, settings = config, searcher_settings(config)
    space = HParamSpace(raw.get("hyperparameters") or {})
    search = _build(settings, space, views.experiment_seed(raw), raw, custom_method)
    search.settings = settings
    return search


def _units(length: TrialLength | None) -> int | None:
    return None if length is None else length.units


def _build(settings: SearcherSettings, space: HParamSpace, seed: int | None, config: Mapping[str, Any],
           custom_method: Any) -> SearchMethod:
    match settings:
        case SingleSettings():
            return SingleSearch(space, seed, _units(settings.length))
        case RandomSettings():
            return RandomSearch(space, seed, settings.max_trials, settings.max_concurrent_trials,
                                _units(settings.length))
        case GridSettings():
            return GridSearch(space, seed, settings.max_concurrent_trials, _units(settings.length))
        case AsyncHalvingSettings():
            return asha.async_halving(settings, space, seed, _bracket_class(settings.promotions))
        case AdaptiveAshaSettings():  # asha_promotion's settings are adaptive ones too
            return asha.adaptive_asha(settings, space, seed, _bracket_class(settings.promotions))
        case HyperbandSettings():
            return HyperbandSearch(
                space, seed, MetricReader.of(settings, settings.length.time_metric), total=settings.length.units,
                divisor=settings.divisor, max_rungs=settings.max_rungs, max_trials=settings.max_trials,
                max_concurrent=settings.max_concurrent_trials,
            )
        case PBTSettings():
            return PBTSearch(
                space, seed, MetricReader.of(settings, settings.time_metric),
                population_size=settings.population_size, num_rounds=settings.num_rounds,
                length_per_round=settings.length_per_round, truncate_fraction=settings.truncate_fraction,
                resample_probability=settings.resample_probability, perturb_factor=settings.perturb_factor,
            )
        case OptunaSettings():
            from stalwart.searcher.optuna_search import OptunaSearch

            time_metric = None if settings.length is None else settings.length.time_metric
            return OptunaSearch(
                space, seed, MetricReader.of(settings, time_metric), max_trials=settings.max_trials,
                max_concurrent=settings.max_concurrent_trials, length=_units(settings.length),
                sampler=settings.sampler,
            )
        case CustomSettings():
            return _custom(config, custom_method)
    raise TypeError(f"no search method for {type(settings).__name__}")  # every settings class is matched above


def _bracket_class(promotions: bool) -> type:
    return PromotionBracket if promotions else asha.Bracket


def _custom(config: Mapping[str, Any], custom_method: Any) -> SearchMethod:
    if custom_method is None:
        raise ConfigError(
            "searcher.name: 'custom' needs the user's search method object",
            details=["searcher.name: the master builds CustomSearch(user_method, config) "
                     "with the class from the context"],
        )
    from stalwart.searcher.custom import CustomSearch

    search: SearchMethod = CustomSearch(custom_method, config)
    return search
