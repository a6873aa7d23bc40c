"""PyYAML safe loader and dumper that resolve plain scalars as YAML 1.2 does (ruamel.yaml, Determined's YAML).

PyYAML follows YAML 1.1: `yes`/`on`/`no` are booleans, `017` is octal, `1:20` is sexagesimal and `1e3` a
string. Determined's `yaml_safe_load` gives 'yes', 17, '1:20' and 1000.0 for them; these classes do too.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_RE = re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)$")
_FLOAT_RE = re.compile(r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                           |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
                           |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                           |[-+]?\.(?:inf|Inf|INF)
                           |\.(?:nan|NaN|NAN))$""", re.X)
_RADIX = {"0b": 2, "0o": 8, "0x": 16}


def _yaml12_resolvers() -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    """SafeLoader's implicit resolvers less its YAML 1.1 bool, int and float ones, plus YAML 1.2's."""
    kept = {first: [(tag, rx) for tag, rx in pairs if tag not in (_BOOL, _INT, _FLOAT)]
            for first, pairs in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    for tag, regexp, firsts in ((_BOOL, _BOOL_RE, "tTfF"), (_INT, _INT_RE, "-+0123456789"),
                                (_FLOAT, _FLOAT_RE, "-+0123456789.")):
        for first in firsts:
            kept.setdefault(first, []).append((tag, regexp))
    return kept


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """A YAML 1.2 integer: decimal (a leading 0 does not make it octal), 0b, 0o or 0x; `_` ignored."""
    text = str(loader.construct_scalar(node)).replace("_", "")
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    radix = _RADIX.get(digits[:2], 10)
    return sign * int(digits[2:] if radix != 10 else digits, radix)


class Yaml12SafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader resolving plain scalars by YAML 1.2's core schema."""


class Yaml12SafeDumper(yaml.SafeDumper):
    """yaml.SafeDumper that quotes strings exactly when YAML 1.2 would read them as something else."""


Yaml12SafeLoader.yaml_implicit_resolvers = _yaml12_resolvers()
Yaml12SafeLoader.add_constructor(_INT, _construct_int)
Yaml12SafeDumper.yaml_implicit_resolvers = _yaml12_resolvers()
