"""Merge defaults (master task defaults, templates) under a user config, Determined's way.

The user's value wins; maps merge key by key; a non-empty user list replaces the defaults' (an empty or missing one
takes them), except `bind_mounts` and `resources.devices` (the user's, then the defaults' whose `container_path` is
unused), `environment.environment_variables` (the defaults' first, then the user's, which override them),
`log_policies` (by `name`) and `environment.pod_spec` (Kubernetes' strategic merge: lists of named things such as
`containers` and `volumes` merge entry by entry, by name). Union sections (`checkpoint_storage`, `searcher`, a
hyperparameter) merge their variant only when both sides name the same `type`/`name`; else only the shared fields.
"""

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
    ("tensorboard_storage",): (
        "type",
        frozenset(),
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
    hyperparameter = len(path) >= 2 and path[0] == "hyperparameters" and ("type" in user or "type" in defaults)
    if hyperparameter and user.get("type") != defaults.get("type"):  # of another kind: the user's as it is
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


_STRATEGIC_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
                   "env": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath", "ports": "containerPort",
                   "imagePullSecrets": "name", "hostAliases": "ip"}
"""pod_spec lists that Kubernetes' strategic merge merges entry by entry, and the key that names an entry."""


def _strategic(user: Any, defaults: Any) -> Any:
    """pod_spec: maps merge (the user's value wins), lists of `_STRATEGIC_KEYS` merge by their key (the defaults'
    entries in order, each merged with the user's of the same key, then the user's new ones); other lists are the
    user's."""
    if isinstance(user, Mapping) and isinstance(defaults, Mapping):
        out = dict(defaults)
        for key, value in user.items():
            if key not in out or value is None:
                out[key] = value if value is not None else out.get(key)
            elif key in _STRATEGIC_KEYS and isinstance(value, list) and isinstance(out[key], list):
                out[key] = _by_key(value, out[key], _STRATEGIC_KEYS[key])
            else:
                out[key] = _strategic(value, out[key])
        return out
    return user


def _by_key(user: list[Any], defaults: list[Any], key: str) -> list[Any]:
    named = {e.get(key): e for e in user if isinstance(e, Mapping) and e.get(key) is not None}
    out = [_strategic(named.pop(d.get(key)), d) if isinstance(d, Mapping) and d.get(key) in named else d
           for d in defaults]
    return out + [e for e in user if not (isinstance(e, Mapping) and e.get(key) is not None)
                  or e.get(key) in named]


_LIST_RULES: dict[tuple[str, ...], Callable[[Any, Any], Any]] = {
    ("environment", "pod_spec"): _strategic,
    ("bind_mounts",): _by_container_path,
    ("resources", "devices"): _by_container_path,
    ("environment", "environment_variables"): _concat_env,
    ("log_policies",): _by_name,
}
