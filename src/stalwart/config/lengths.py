"""Training lengths: `{batches|records|epochs: N}` maps, checked and parsed into `Length`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config._schema import Checker, Problems, is_int, join, type_name, unknown_key_message

LENGTH_UNITS = ("batches", "records", "epochs")


@dataclass(frozen=True)
class Length:
    """A training length such as 937 batches."""

    unit: str
    value: int

    def to_dict(self) -> dict[str, Any]:
        return {self.unit: self.value}


def check_length(value: Any, path: str, problems: Problems, *, allow_bare_int: bool = False) -> Any:
    """Validate a length; return it as a `{unit: value}` dict (a bare int counts as batches)."""
    if allow_bare_int and is_int(value):
        if value < 0:
            problems.add(path, f"expected an integer >= 0, got {value!r}")
        return {"batches": value}
    if not isinstance(value, Mapping):
        wanted = "a length like {batches: 100}" + (" or an integer" if allow_bare_int else "")
        problems.add(path, f"expected {wanted}, got {type_name(value)}")
        return value
    bad_keys = [k for k in value if k not in LENGTH_UNITS]
    for key in bad_keys:
        problems.add(join(path, key), unknown_key_message(key, list(LENGTH_UNITS)))
    units = [k for k in value if k in LENGTH_UNITS]
    if not bad_keys and len(units) != 1:
        got = ", ".join(units) if units else "none"
        problems.add(path, f"a length needs exactly one of batches, records, epochs (got {got})")
    for unit in units:
        amount = value[unit]
        if not is_int(amount) or amount < 0:
            problems.add(join(path, unit), f"expected an integer >= 0, got {type_name(amount)}")
    return dict(value)


def length_checker(allow_bare_int: bool = False) -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        return check_length(value, path, problems, allow_bare_int=allow_bare_int)

    return check


def parse_length(value: Any, path: str = "length", *, allow_bare_int: bool = False) -> Length:
    """Parse a length (a checked config value or user input); raise ConfigError if it is bad."""
    problems = Problems()
    checked = check_length(value, path, problems, allow_bare_int=allow_bare_int)
    if problems:
        raise ConfigError(f"invalid length at {path}", details=problems.details)
    ((unit, amount),) = checked.items()
    return Length(unit, amount)
