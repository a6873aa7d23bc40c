"""Typed read-only accessors over an expanded experiment config, for the master and the harness."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.config.hyperparameters import is_leaf
from stalwart.config.lengths import Length, parse_length

# Accessors read `ExpandedConfig.config`; they also tolerate a partial dict (missing → default).


def _section(cfg: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = cfg.get(key)
    return value if isinstance(value, Mapping) else {}


def searcher_metric(cfg: Mapping[str, Any]) -> str | None:
    return _section(cfg, "searcher").get("metric")


def smaller_is_better(cfg: Mapping[str, Any]) -> bool:
    value = _section(cfg, "searcher").get("smaller_is_better")
    return True if value is None else bool(value)


def max_length(cfg: Mapping[str, Any]) -> Length | None:
    """The (deprecated) `searcher.max_length`, or None."""
    value = _section(cfg, "searcher").get("max_length")
    if value is None:
        return None
    return parse_length(value, "searcher.max_length", allow_bare_int=True)


def max_time(cfg: Mapping[str, Any]) -> tuple[int, str] | None:
    """`(searcher.max_time, searcher.time_metric)`, or None when they are not set."""
    searcher = _section(cfg, "searcher")
    if searcher.get("max_time") is None or searcher.get("time_metric") is None:
        return None
    return int(searcher["max_time"]), str(searcher["time_metric"])


def max_restarts(cfg: Mapping[str, Any]) -> int:
    value = cfg.get("max_restarts")
    return 5 if value is None else int(value)


def checkpoint_storage(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return dict(_section(cfg, "checkpoint_storage"))


def checkpoint_gc_policy(cfg: Mapping[str, Any]) -> tuple[int, int, int]:
    """`(save_experiment_best, save_trial_best, save_trial_latest)`."""
    storage = _section(cfg, "checkpoint_storage")
    def get(key: str, default: int) -> int:
        value = storage.get(key)
        return default if value is None else int(value)

    return (
        get("save_experiment_best", 0),
        get("save_trial_best", 1),
        get("save_trial_latest", 1),
    )


def environment_variables(cfg: Mapping[str, Any], slot_type: str = "cpu") -> dict[str, str]:
    """The `NAME=VALUE` entries for one accelerator kind (`cpu`, `cuda`/`gpu`, `rocm`) as a dict.

    Later entries override earlier ones with the same name.
    """
    kind = "cuda" if slot_type == "gpu" else slot_type
    entries: Any = _section(cfg, "environment").get("environment_variables")
    if isinstance(entries, Mapping):
        entries = entries.get(kind) or (entries.get("gpu") if kind == "cuda" else None)
    out: dict[str, str] = {}
    for entry in entries or []:
        name, _, value = str(entry).partition("=")
        out[name] = value
    return out


def experiment_seed(cfg: Mapping[str, Any]) -> int | None:
    seed = _section(cfg, "reproducibility").get("experiment_seed")
    return None if seed is None else int(seed)


def slots_per_trial(cfg: Mapping[str, Any]) -> int:
    value = _section(cfg, "resources").get("slots_per_trial")
    return 1 if value is None else int(value)


def records_per_epoch(cfg: Mapping[str, Any]) -> int:
    value = cfg.get("records_per_epoch")
    return 0 if value is None else int(value)


def global_batch_size(cfg: Mapping[str, Any]) -> int | None:
    """`hyperparameters.global_batch_size` when it is a const integer, else None."""
    spec = _section(cfg, "hyperparameters").get("global_batch_size")
    if is_leaf(spec):
        spec = spec.get("val") if spec.get("type") == "const" else None
    if isinstance(spec, int) and not isinstance(spec, bool):
        return spec
    return None
