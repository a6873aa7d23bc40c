"""Reading an experiment config file given on the command line, with `--config KEY=VAL` overrides."""

from __future__ import annotations

import pathlib
from typing import Any

import yaml

from stalwart.api.errors import InvalidRequest
from stalwart.config import apply_overrides, read_source


def _text(path: str) -> str:
    p = pathlib.Path(path)
    if not p.is_file():
        raise InvalidRequest(f"config file '{path}' does not exist (give the path to the experiment YAML)")
    return p.read_text()


def read_config_text(path: str, overrides: tuple[str, ...] = ()) -> str:
    """The file's YAML text, as written unless there are overrides (then re-serialised with them applied)."""
    text = _text(path)
    if not overrides:
        return text
    return yaml.safe_dump(apply_overrides(read_source(text, f"config file {path}"), list(overrides)), sort_keys=False)


def read_config_mapping(path: str) -> dict[str, Any]:
    """The file's config as a mapping (ConfigError naming the file when it is not YAML or not a mapping)."""
    return read_source(_text(path), f"config file {path}")
