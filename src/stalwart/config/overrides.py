"""Apply `--config KEY=VALUE` overrides to a config, following Determined's CLI rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from stalwart.api.errors import ConfigError
from stalwart.config.source import read_source, to_plain

# Keys whose value must be a list; a single `{...}` given for them is wrapped in one.
LIST_KEYS = frozenset({"bind_mounts"})


class _OverrideProblem(Exception):
    pass


def _yaml_value(text: str) -> Any:
    try:
        return to_plain(yaml.safe_load(text))
    except yaml.YAMLError as err:
        first_line = str(err).splitlines()[0] if str(err) else "cannot be parsed"
        raise _OverrideProblem(f"value is not valid YAML ({first_line})") from None


def parse_override_value(key: str, text: str) -> Any:
    """YAML for `[...]`/`{...}`; a list when the text has a comma; else one YAML scalar."""
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        value = _yaml_value(stripped)
    elif "," in text:
        value = [_yaml_value(part) for part in text.split(",")]
    else:
        value = _yaml_value(text)
    if key in LIST_KEYS and isinstance(value, Mapping):
        value = [value]
    return value


def _set_path(config: dict[str, Any], parts: list[str], value: Any) -> None:
    node = config
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            where = ".".join(parts[: depth + 1])
            raise _OverrideProblem(f"{where} is {_kind(child)}, not a mapping")
        node = child
    node[parts[-1]] = value


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def apply_overrides(source: str | Mapping[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Return a new config dict with every `KEY=VALUE` override applied, in order.

    Raises ConfigError naming each bad override (no `=`, empty key, bad value, or a path
    that goes through a scalar or list).
    """
    config = read_source(source)
    problems: list[str] = []
    for override in overrides:
        key, sep, text = str(override).partition("=")
        key = key.strip()
        parts = key.split(".")
        if not sep:
            hint = "expected KEY=VALUE (a dotted key such as searcher.max_trials)"
            problems.append(f"{override}: {hint}")
            continue
        if not key or not all(parts):
            problems.append(f"{override}: the key before '=' must be a non-empty dotted path")
            continue
        try:
            _set_path(config, parts, parse_override_value(key, text))
        except _OverrideProblem as err:
            problems.append(f"{override}: {err}")
    if problems:
        suffix = "" if len(problems) == 1 else "s"
        message = f"invalid --config override ({len(problems)} problem{suffix})"
        raise ConfigError(message, details=problems)
    return config
