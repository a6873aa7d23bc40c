"""Turn YAML text (or a config file's) or a parsed mapping into plain, JSON-serialisable data, with clear errors."""

from __future__ import annotations

import datetime
import pathlib
from collections.abc import Mapping
from typing import Any

import yaml

from stalwart.api.errors import ConfigError


def to_plain(value: Any) -> Any:
    """A deep copy made of dict/list/str/int/float/bool/None only (dates become ISO strings)."""
    if isinstance(value, Mapping):
        return {str(k) if not isinstance(k, str) else k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [to_plain(v) for v in sorted(value, key=repr)]
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def read_config_file(path: str | pathlib.Path, what: str) -> str:
    """The text of a config file (`what`: 'master config'); a ConfigError naming the file when it cannot be read."""
    p = pathlib.Path(path)
    try:
        return p.read_text()
    except OSError as err:
        raise ConfigError(f"cannot read {what} {p}: {err.strerror or err}") from None


def parse_yaml(text: str, what: str = "experiment config") -> Any:
    """Parse one YAML document; a syntax error becomes a ConfigError naming line and column."""
    try:
        return to_plain(yaml.safe_load(text))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "cannot be parsed"
        if err.context and problem.startswith("but "):  # e.g. "expected X ... but found Y"
            problem = f"{err.context}, {problem}"
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        detail = f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else problem
        raise ConfigError(f"{what} is malformed YAML{where}: {problem}", details=[detail]) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{what} is malformed YAML: {err}", details=[str(err)]) from None


def _describe(value: Any) -> str:
    if value is None:
        return "an empty document"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a plain string"
    return f"a {type(value).__name__} ({value!r})"


def read_source(source: str | Mapping[str, Any], what: str = "experiment config") -> dict[str, Any]:
    """YAML text or an already-parsed mapping → a fresh plain dict (the caller's is not touched)."""
    if isinstance(source, str):
        data = parse_yaml(source, what)
    elif isinstance(source, Mapping):
        data = to_plain(source)
    else:
        raise ConfigError(f"{what} must be YAML text or a mapping, got {type(source).__name__}")
    if not isinstance(data, dict):
        raise ConfigError(f"{what} must be a mapping of keys to values, got {_describe(data)}")
    return data
