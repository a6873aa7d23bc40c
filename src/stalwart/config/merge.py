"""Merge defaults (master task defaults, templates) under a user config, Determined's way."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

# Union sections: discriminator key and the fields shared by every variant.
_UNIONS: dict[tuple[str, ...], tuple[str, frozenset[str]]] = {
    ("checkpoint_storage",): (
        "type",
        frozenset({"save_experiment_best", "save_trial_best", "save_trial_latest"}),
    ),
    ("searcher",): (
        "name",
        frozenset({"metric", "smaller_is_better", "source_trial_id", "source_checkpoint_uuid"}),
    ),
}


def merge_defaults(user: Any, defaults: Any) -> Any:
    """Return `user` with gaps filled from `defaults`; neither input is modified."""
    return _merge(copy.deepcopy(user), copy.deepcopy(defaults), ())


def _merge(user: Any, defaults: Any, path: tuple[str, ...]) -> Any:
    if user is None:
        return defaults
    if defaults is None:
        return user
    special = _LIST_RULES.get(path)
    if special is not None:
        return special(user, defaults)
    if not (isinstance(user, Mapping) and isinstance(defaults, Mapping)):
        if isinstance(user, list) and not user and isinstance(defaults, list):
            return defaults
        return user
    if path[:1] == ("hyperparameters",) and ("type" in user or "type" in defaults):
        return user
    if path in _UNIONS:
        key, shared = _UNIONS[path]
        if user.get(key) is not None and defaults.get(key) not in (None, user.get(key)):
            defaults = {k: v for k, v in defaults.items() if k in shared}
    out = dict(user)
    for key, value in defaults.items():
        out[key] = _merge(out.get(key), value, path + (str(key),))
    return out


def _by_container_path(user: Any, defaults: Any) -> Any:
    """bind_mounts/devices: the user's entries, then defaults whose container_path is unused."""
    if not (isinstance(user, list) and isinstance(defaults, list)):
        return user
    used = {m.get("container_path") for m in user if isinstance(m, Mapping)}
    extra = [
        m for m in defaults if not (isinstance(m, Mapping) and m.get("container_path") in used)
    ]
    return user + extra


def _by_name(user: Any, defaults: Any) -> Any:
    """log_policies: the user's entry wins over a default with the same name."""
    if not (isinstance(user, list) and isinstance(defaults, list)):
        return user
    names = {p.get("name") for p in user if isinstance(p, Mapping) and p.get("name")}
    kept = [p for p in defaults if not (isinstance(p, Mapping) and p.get("name") in names)]
    return kept + user


def _env_map(value: Any) -> dict[str, Any] | None:
    if isinstance(value, list):
        return {kind: list(value) for kind in ("cpu", "cuda", "rocm")}
    if isinstance(value, Mapping) and all(v is None or isinstance(v, list) for v in value.values()):
        out: dict[str, Any] = {}
        for key, entries in value.items():
            kind = "cuda" if key == "gpu" else key
            out[kind] = out.get(kind, []) + list(entries or [])
        return out
    return None


def _concat_env(user: Any, defaults: Any) -> Any:
    """environment_variables: defaults first, then the user's (later entries override)."""
    if isinstance(user, list) and isinstance(defaults, list):
        return defaults + user
    user_map, default_map = _env_map(user), _env_map(defaults)
    if user_map is None or default_map is None:
        return user
    kinds = list(dict.fromkeys([*default_map, *user_map]))
    return {k: default_map.get(k, []) + user_map.get(k, []) for k in kinds}


_LIST_RULES: dict[tuple[str, ...], Callable[[Any, Any], Any]] = {
    ("bind_mounts",): _by_container_path,
    ("resources", "devices"): _by_container_path,
    ("environment", "environment_variables"): _concat_env,
    ("log_policies",): _by_name,
}
