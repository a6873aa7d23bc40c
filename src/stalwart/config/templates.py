"""Configuration templates (docs/templates.md): a template's name and config checked, and a template expanded
under a task's own config, Determined's way (config/merge.py: the task's config wins, maps merge, lists by
Determined's rules).

A template is expanded once, when the task is created; the merged config is what the task stores, so changing the
template later changes no task. A template cannot name another template.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

import yaml

from stalwart.api.errors import ConfigError, InvalidRequest
from stalwart.config.merge import merge_defaults
from stalwart.config.source import read_source

MAX_NAME = 256
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def check_name(name: str) -> str:
    """`name` when it may name a template (letters, digits, '.', '_', '-'; not starting with a sign; at most
    MAX_NAME characters); InvalidRequest (400) saying what is wrong otherwise."""
    if not name or len(name) > MAX_NAME or not _NAME.match(name):
        raise InvalidRequest(f"template name {name!r} is not valid: use 1 to {MAX_NAME} letters, digits, '.', '_' "
                             "or '-', starting with a letter or digit (e.g. 'gpu-defaults')")
    return name


def read_template(given: str | Mapping[str, Any]) -> dict[str, Any]:
    """A template's config from YAML text or a mapping: a plain dict; ConfigError (400) for what is no mapping or a
    config that itself names a template."""
    config = read_source(given, "template config")
    if "template" in config:
        raise ConfigError("template config: a template cannot name another template (remove its `template` key)")
    return config


def expand(config: Mapping[str, Any], template: Mapping[str, Any],
           keys: Collection[str] | None = None) -> dict[str, Any]:
    """`config` (a task's own) with `template` merged under it: the task's values win (neither is changed).
    `keys`: the top-level keys this kind of task has (None: all): a template shared by experiments and tasks may
    hold keys only experiments have (`searcher`, `max_restarts`), which a task leaves out."""
    used = {k: v for k, v in template.items() if keys is None or k in keys}
    merged: dict[str, Any] = merge_defaults(dict(config), used)
    return merged


def expand_text(config_text: str, template: Mapping[str, Any], what: str = "experiment config") -> str:
    """An experiment config's YAML text with `template` merged under it, as YAML text (its comments are lost: the
    merged config is what is stored)."""
    merged = expand(read_source(config_text, what), template)
    return yaml.safe_dump(merged, sort_keys=False, allow_unicode=True)
