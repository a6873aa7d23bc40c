"""Experiment configuration: Determined-compatible parsing, validation, defaults and overrides."""

from stalwart.config.experiment import (
    IGNORED_KEYS,
    NO_EFFECT_KEYS,
    ExpandedConfig,
    load_experiment_config,
)
from stalwart.config.hyperparameters import iter_leaves, resolve_const_hparams
from stalwart.config.lengths import LENGTH_UNITS, Length, parse_length
from stalwart.config.merge import merge_defaults
from stalwart.config.overrides import apply_overrides
from stalwart.config.searcher import searcher_settings
from stalwart.config.searcher_settings import SearcherSettings, TrialLength
from stalwart.config.source import read_source
from stalwart.config.views import (
    checkpoint_gc_policy,
    checkpoint_storage,
    environment_variables,
    experiment_seed,
    global_batch_size,
    max_length,
    max_restarts,
    max_time,
    records_per_epoch,
    searcher_metric,
    slots_per_trial,
    smaller_is_better,
)

__all__ = [
    "IGNORED_KEYS",
    "LENGTH_UNITS",
    "NO_EFFECT_KEYS",
    "ExpandedConfig",
    "Length",
    "SearcherSettings",
    "TrialLength",
    "apply_overrides",
    "checkpoint_gc_policy",
    "checkpoint_storage",
    "environment_variables",
    "experiment_seed",
    "global_batch_size",
    "iter_leaves",
    "load_experiment_config",
    "max_length",
    "max_restarts",
    "max_time",
    "merge_defaults",
    "parse_length",
    "read_source",
    "records_per_epoch",
    "resolve_const_hparams",
    "searcher_metric",
    "searcher_settings",
    "slots_per_trial",
    "smaller_is_better",
]
