"""Shared helpers for the config tests: a minimal valid config and a problem collector."""

from __future__ import annotations

import copy

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config import load_experiment_config

MINIMAL = {
    "entrypoint": "python3 train.py",
    "searcher": {"name": "single", "metric": "loss"},
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/ckpts"},
}


@pytest.fixture
def minimal() -> dict:
    return copy.deepcopy(MINIMAL)


@pytest.fixture
def problems():
    """Load a config that must fail; return the list of `path: problem` details."""

    def run(config, **kwargs) -> list[str]:
        with pytest.raises(ConfigError) as info:
            load_experiment_config(config, **kwargs)
        return info.value.details

    return run


@pytest.fixture
def expand():
    """Load a config that must pass; return the expanded dict."""

    def run(config, **kwargs) -> dict:
        return load_experiment_config(config, **kwargs).config

    return run
