"""core_v2's `Config` (Determined 0.38.1's) and the two older classes it replaced, and the detached experiment's
config text a `Config` stands for."""

from __future__ import annotations

import dataclasses
import pathlib
import uuid
import warnings
from typing import Any

import yaml

from stalwart.config.experiment import UNMANAGED_SEARCHER

DEPRECATED_CLASS = ("'{name}' class have been deprecated and will be removed in a future version. Please use "
                    "`Config` class instead.")
DEPRECATED_ARGS = ("'defaults' and 'unmanaged' parameters have been deprecated and will be removed in a future "
                   "version. Please use `config` instead.")
MANAGED_IGNORES = ("Running experiment in managed mode ignores all config passed through `config`, `defaults` and "
                   "`unmanaged`")


@dataclasses.dataclass
class Config:
    """What a detached experiment is (ignored inside a managed trial, whose experiment config rules)."""

    name: str | None = None
    hparams: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    description: str | None = None
    labels: list[str] | None = None
    workspace: str | None = None
    project: str | None = None
    checkpoint_storage: str | dict[str, Any] | None = None
    searcher: dict[str, Any] | None = None
    external_experiment_id: str | None = None
    external_trial_id: str | None = None


class DefaultConfig(Config):
    """Deprecated (Determined 0.38): use `Config`."""

    def __init__(self, **kwargs: Any) -> None:
        warnings.warn(DEPRECATED_CLASS.format(name="DefaultConfig"), FutureWarning, stacklevel=2)
        super().__init__(**kwargs)


class UnmanagedConfig(Config):
    """Deprecated (Determined 0.38): use `Config`."""

    def __init__(self, **kwargs: Any) -> None:
        warnings.warn(DEPRECATED_CLASS.format(name="UnmanagedConfig"), FutureWarning, stacklevel=2)
        super().__init__(**kwargs)


def merge_config(config: Config | None, defaults: Config | None, unmanaged: Config | None,
                 managed: bool) -> Config | None:
    """The one Config of init's three arguments: `config` wins; else `defaults`, with `unmanaged`'s place and
    external ids where it leaves them unset. None inside a managed trial given none; ValueError outside one."""
    if defaults is not None or unmanaged is not None:
        warnings.warn(DEPRECATED_ARGS, FutureWarning, stacklevel=3)
        if managed:
            warnings.warn(MANAGED_IGNORES, FutureWarning, stacklevel=3)
    if config is not None:
        return config
    if defaults is None:
        if managed:
            return None
        raise ValueError("either specify `defaults` or `config`, or run as a managed determined experiment")
    if unmanaged is not None:
        for key in ("project", "workspace", "external_experiment_id", "external_trial_id"):
            if getattr(defaults, key) is None:
                setattr(defaults, key, getattr(unmanaged, key))
    return defaults


def default_checkpoint_dir() -> pathlib.Path:
    """Where a detached script's checkpoints go when nothing says: the user's data directory (Determined's)."""
    return pathlib.Path.home() / ".local" / "share" / "determined" / "checkpoints"


def storage_config(storage: str | dict[str, Any] | None) -> dict[str, Any]:
    """A checkpoint_storage section: a directory stands for shared_fs storage there."""
    if isinstance(storage, dict):
        return dict(storage)
    path = pathlib.Path(storage) if storage else default_checkpoint_dir()
    path = path.expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return {"type": "shared_fs", "host_path": str(path)}


def experiment_config_text(config: Config, storage: dict[str, Any]) -> str:
    """The detached experiment's config as YAML text (no entrypoint: its script is already running)."""
    text: dict[str, Any] = {
        "name": config.name or f"unmanaged-{uuid.uuid4().hex[:8]}",
        "searcher": config.searcher or dict(UNMANAGED_SEARCHER),
        "checkpoint_storage": storage,
    }
    for key in ("data", "description", "labels", "workspace", "project"):
        value = getattr(config, key)
        if value is not None:
            text[key] = value
    return yaml.safe_dump(text, sort_keys=False)
