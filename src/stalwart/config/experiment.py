"""Load, validate and expand a Determined-compatible experiment config (schema v0)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config._schema import (
    Field,
    Problems,
    any_map,
    boolean,
    check_section,
    choice,
    integer,
    list_of,
    section,
    section_defaults,
    string,
    subsection,
)
from stalwart.config.environment import ENVIRONMENT_SPEC, check_environment
from stalwart.config.hyperparameters import check_hyperparameters
from stalwart.config.lengths import length_checker
from stalwart.config.merge import merge_defaults
from stalwart.config.searcher import WARN_SEARCHER_NAMES, check_searcher, check_searcher_hparams
from stalwart.config.searcher_settings import SearcherSettings, settings_of
from stalwart.config.sections import (
    BIND_MOUNT_SPEC,
    INTEGRATIONS_SPEC,
    OPTIMIZATIONS_NO_EFFECT,
    OPTIMIZATIONS_SPEC,
    PBS_SPEC,
    PROFILING_SPEC,
    REPRODUCIBILITY_SPEC,
    RESOURCES_SPEC,
    RETENTION_POLICY_SPEC,
    SECURITY_SPEC,
    SLURM_SPEC,
    check_log_policies,
    check_profiling,
    check_resources,
    default_log_policies,
    entrypoint_checker,
)
from stalwart.config.source import read_source, to_plain
from stalwart.config.storage import check_checkpoint_storage

ENTRYPOINT_REQUIRED = (
    "required (a script command such as 'python3 train.py' or a Trial class 'model_def:MyTrial')"
)

EXPERIMENT_SPEC: dict[str, Field] = {
    "name": Field(string(nonempty=True)),
    "description": Field(string()),
    "labels": Field(list_of(string()), default=list),
    "data": Field(any_map(), default=dict),
    "workspace": Field(string(), default=""),
    "project": Field(string(), default=""),
    "entrypoint": Field(entrypoint_checker(), required=True, required_message=ENTRYPOINT_REQUIRED),
    "hyperparameters": Field(check_hyperparameters, default=dict),
    "searcher": Field(check_searcher, required=True),
    "resources": subsection(RESOURCES_SPEC, check_resources),
    "environment": subsection(ENVIRONMENT_SPEC, check_environment),
    "bind_mounts": Field(list_of(section(BIND_MOUNT_SPEC)), default=list),
    "checkpoint_storage": Field(
        check_checkpoint_storage,
        required=True,
        required_message="required (the master has no default)",
    ),
    "checkpoint_policy": Field(choice("best", "all", "none"), default="best"),
    "max_restarts": Field(integer(minimum=0), default=5),
    "min_validation_period": Field(length_checker(), default=lambda: {"batches": 0}),
    "min_checkpoint_period": Field(length_checker(), default=lambda: {"batches": 0}),
    "perform_initial_validation": Field(boolean(), default=False),
    "scheduling_unit": Field(integer(minimum=1), default=100),
    "records_per_epoch": Field(integer(minimum=0), default=0),
    "optimizations": subsection(OPTIMIZATIONS_SPEC),
    "reproducibility": subsection(REPRODUCIBILITY_SPEC),
    "profiling": subsection(PROFILING_SPEC, check_profiling),
    "log_policies": Field(check_log_policies, default=default_log_policies),
    "retention_policy": Field(section(RETENTION_POLICY_SPEC)),
    "debug": Field(boolean(), default=False),
    "preemption_timeout": Field(integer(minimum=0), default=3600),
    "tensorboard_storage": Field(any_map()),
    "integrations": Field(section(INTEGRATIONS_SPEC)),
    "security": Field(section(SECURITY_SPEC)),
    "slurm": subsection(SLURM_SPEC),
    "pbs": subsection(PBS_SPEC),
    "data_layer": Field(any_map()),
    "internal": Field(any_map()),
}

# A detached experiment's (core_v2 outside the cluster): its script is already running, so no entrypoint is needed.
UNMANAGED_EXPERIMENT_SPEC: dict[str, Field] = {**EXPERIMENT_SPEC, "entrypoint": Field(entrypoint_checker())}
UNMANAGED_SEARCHER = {"name": "single", "metric": "unmanaged", "max_length": 100000000}
"""A detached experiment's searcher when its config names none (core_v2's, as Determined's): it only labels it."""

# Keys that parse but do nothing in Stalwart; setting one gives a warning.
NO_EFFECT_KEYS: set[str] = {"profiling"}

# Keys for things Stalwart does differently: kept in the stored config, warned about when set. The container keys
# (environment.image, registry_auth, bind_mounts, resources.devices, ...) are honoured by Docker and Podman agents.
IGNORED_KEYS: dict[str, str] = {
    "environment.pod_spec": "ignored: Kubernetes only; Stalwart's agents run tasks as processes or in Docker or "
                            "Podman containers",
    "slurm": "ignored: Stalwart does not submit trials to Slurm",
    "pbs": "ignored: Stalwart does not submit trials to PBS",
}


@dataclass
class ExpandedConfig:
    """A validated config with every schema key present, plus warnings for the user.

    `searcher` is the typed searcher the search methods take (None for an end-of-life searcher name,
    which parses but cannot run).
    """

    config: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    searcher: SearcherSettings | None = None


def _lookup(config: Mapping[str, Any], dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


_DEFAULTS = section_defaults(EXPERIMENT_SPEC)


def _is_set(user: Mapping[str, Any], dotted: str) -> bool:
    """Whether the user gave `dotted` a value other than its default (null/empty count as unset)."""
    value, default = _lookup(user, dotted), _lookup(_DEFAULTS, dotted)
    if isinstance(value, Mapping):
        default = default if isinstance(default, Mapping) else {}
        return any(v not in (None, {}, []) and v != default.get(k) for k, v in value.items())
    return value not in (None, "", [], {}) and value != default


def collect_warnings(user: Mapping[str, Any]) -> list[str]:
    """Warnings about what the user wrote (not about master defaults)."""
    warnings = [
        f"{key}: has no effect in Stalwart; the setting is kept but ignored"
        for key in sorted(NO_EFFECT_KEYS)
        if _is_set(user, key)
    ]
    warnings += [f"optimizations.{key}: {why}" for key, why in OPTIMIZATIONS_NO_EFFECT.items()
                 if _is_set(user, f"optimizations.{key}")]
    warnings += [f"{key}: {why}" for key, why in IGNORED_KEYS.items() if _is_set(user, key)]
    name = _lookup(user, "searcher.name")
    if isinstance(name, str) and name in WARN_SEARCHER_NAMES:
        warnings.append(
            f"searcher.name: '{name}' is end-of-life in Determined; it is accepted for parsing only"
        )
    return warnings


def _check_cross_sections(cfg: dict[str, Any], problems: Problems) -> None:
    workspace, project = cfg.get("workspace"), cfg.get("project")
    if workspace and not project:
        problems.add("project", "required when workspace is set")
    if project and not workspace:
        problems.add("workspace", "required when project is set")
    searcher, hparams = cfg.get("searcher"), cfg.get("hyperparameters")
    if isinstance(searcher, Mapping) and isinstance(hparams, Mapping):
        check_searcher_hparams(searcher, hparams, problems)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def load_experiment_config(
    source: str | Mapping[str, Any], *, master_defaults: Mapping[str, Any] | None = None, unmanaged: bool = False
) -> ExpandedConfig:
    """Parse, merge over the master's defaults, validate and expand an experiment config (a detached one's, with
    `unmanaged`, needs no entrypoint).

    Raises ConfigError listing every problem (`dotted.path: problem`) if it is invalid.
    """
    user = read_source(source)
    warnings = collect_warnings(user)
    merged = user
    if master_defaults:
        merged = merge_defaults(user, to_plain(master_defaults))
    problems = Problems()
    cfg = check_section(merged, "", UNMANAGED_EXPERIMENT_SPEC if unmanaged else EXPERIMENT_SPEC, problems)
    _check_cross_sections(cfg, problems)
    if problems:
        message = f"invalid experiment config ({plural(len(problems), 'problem')})"
        raise ConfigError(message, details=problems.details)
    return ExpandedConfig(config=cfg, warnings=warnings, searcher=settings_of(cfg["searcher"]))
