"""An experiment config given to the SDK as a dict, a path to a YAML file, or YAML text: as YAML text."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping
from typing import Any

import yaml

from stalwart.api.errors import ConfigError, InvalidRequest
from stalwart.config import read_source

ConfigSource = Mapping[str, Any] | str | os.PathLike[str]


def config_text(config: ConfigSource) -> str:
    """The config as YAML text. A string naming an existing file is read; any other string is YAML text."""
    if isinstance(config, Mapping):
        return _dump(dict(config))
    if isinstance(config, os.PathLike):
        return _read(pathlib.Path(config))
    if not isinstance(config, str):
        raise InvalidRequest(f"config: expected a dict, a path or YAML text, got {type(config).__name__}")
    if "\n" not in config and pathlib.Path(config).expanduser().is_file():
        return _read(pathlib.Path(config).expanduser())
    try:
        read_source(config, "config")  # a clear ConfigError unless it is YAML text of a mapping
    except ConfigError:
        if "\n" not in config and config.strip().endswith((".yaml", ".yml")):
            raise InvalidRequest(f"config file '{config}' does not exist (give a path, a dict or YAML text)") from None
        raise
    return config


def placed(text: str, workspace: str | None, project: str | None) -> str:
    """The config text with its `workspace` and `project` keys set to these (both or neither given)."""
    if workspace is None and project is None:
        return text
    if workspace is None or project is None:
        raise InvalidRequest("give both workspace and project (or neither: the experiment goes to "
                             "Uncategorized/Uncategorized)")
    data = read_source(text, "config")
    return _dump({**data, "workspace": workspace, "project": project})


def _read(path: pathlib.Path) -> str:
    try:
        text = path.read_text()
    except OSError as err:
        raise InvalidRequest(f"config file '{path}' cannot be read: {err.strerror or err}") from None
    read_source(text, f"config file {path}")
    return text


def _dump(data: dict[str, Any]) -> str:
    try:
        return yaml.safe_dump(data, sort_keys=False)
    except yaml.representer.RepresenterError as err:
        raise ConfigError(f"config: a value cannot be written as YAML: {err}") from None
