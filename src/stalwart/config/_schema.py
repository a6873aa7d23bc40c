"""Building blocks for table-driven validation: a problem collector, field specs and checkers."""

from __future__ import annotations

import copy
import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard


class Problems:
    """Collects `path: problem` strings so that every mistake is reported at once."""

    def __init__(self) -> None:
        self.details: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.details.append(f"{path}: {message}")

    def __len__(self) -> int:
        return len(self.details)

    def __bool__(self) -> bool:
        return bool(self.details)


# A checker gets a non-null value, its dotted path and the collector; it returns the value to
# store (normalised where that makes sense). It reports problems instead of raising.
Checker = Callable[[Any, str, Problems], Any]


@dataclass(frozen=True)
class Field:
    """One key of a section: how to check it, its default and whether it must be given."""

    check: Checker
    default: Any = None  # a value (copied on use) or a zero-argument callable
    required: bool = False
    required_message: str = "required"

    def make_default(self) -> Any:
        if callable(self.default):
            return self.default()
        return copy.deepcopy(self.default)


Spec = Mapping[str, Field]


def join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def show(value: Any) -> str:
    """A short printable form of a user value for error messages."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return show(value)


def unknown_key_message(key: Any, known: list[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean '{close[0]}'?"
    return "unknown key"


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _range_text(minimum: Any, maximum: Any, exclusive_min: Any) -> str:
    if exclusive_min is not None:
        return f" > {exclusive_min}"
    if minimum is not None and maximum is not None:
        return f" in {minimum}..{maximum}"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


def _in_range(value: Any, minimum: Any, maximum: Any, exclusive_min: Any) -> bool:
    if minimum is not None and value < minimum:
        return False
    if maximum is not None and value > maximum:
        return False
    return exclusive_min is None or value > exclusive_min


def integer(minimum: int | None = None, maximum: int | None = None) -> Checker:
    wanted = "an integer" + _range_text(minimum, maximum, None)

    def check(value: Any, path: str, problems: Problems) -> Any:
        if not is_int(value) or not _in_range(value, minimum, maximum, None):
            problems.add(path, f"expected {wanted}, got {type_name(value)}")
        return value

    return check


def number(minimum: float | None = None, exclusive_min: float | None = None,
           maximum: float | None = None) -> Checker:
    wanted = "a number" + _range_text(minimum, maximum, exclusive_min)

    def check(value: Any, path: str, problems: Problems) -> Any:
        if not is_number(value) or not math.isfinite(value) or not _in_range(value, minimum, maximum, exclusive_min):
            problems.add(path, f"expected {wanted}, got {type_name(value)}")
        return value

    return check


def string(nonempty: bool = False) -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if not isinstance(value, str):
            problems.add(path, f"expected a string, got {type_name(value)}")
        elif nonempty and not value.strip():
            problems.add(path, "must not be empty")
        return value

    return check


def boolean() -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if not isinstance(value, bool):
            problems.add(path, f"expected a boolean (true or false), got {type_name(value)}")
        return value

    return check


def choice(*options: str) -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if value not in options:
            problems.add(path, f"expected one of {', '.join(options)}, got {type_name(value)}")
        return value

    return check


def anything() -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        return value

    return check


def any_map() -> Checker:
    """A free-form mapping (user data, Kubernetes objects, ...)."""

    def check(value: Any, path: str, problems: Problems) -> Any:
        if not isinstance(value, Mapping):
            problems.add(path, f"expected a mapping, got {type_name(value)}")
        return value

    return check


def list_of(item: Checker, nonempty: bool = False) -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if not isinstance(value, list):
            problems.add(path, f"expected a list, got {type_name(value)}")
            return value
        if nonempty and not value:
            problems.add(path, "must be a non-empty list")
        return [item(v, f"{path}[{i}]", problems) for i, v in enumerate(value)]

    return check


def map_of(item: Checker) -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if not isinstance(value, Mapping):
            problems.add(path, f"expected a mapping, got {type_name(value)}")
            return value
        return {k: item(v, join(path, k), problems) for k, v in value.items()}

    return check


def either(first: Checker, second: Checker, wanted: str) -> Checker:
    """Accept what `first` accepts, else what `second` accepts; otherwise one problem."""

    def check(value: Any, path: str, problems: Problems) -> Any:
        for candidate in (first, second):
            trial = Problems()
            result = candidate(value, path, trial)
            if not trial:
                return result
        problems.add(path, f"expected {wanted}, got {type_name(value)}")
        return value

    return check


def section(spec: Spec) -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        return check_section(value, path, spec, problems)

    return check


def check_section(
    value: Any,
    path: str,
    spec: Spec,
    problems: Problems,
    *,
    strict: bool = True,
) -> dict[str, Any]:
    """Check a mapping against `spec`; return it with every spec key present (defaults filled).

    With `strict`, keys outside the spec are problems; otherwise they are kept as given.
    """
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        problems.add(path or "(top level)", f"expected a mapping, got {type_name(value)}")
        return section_defaults(spec)
    out: dict[str, Any] = {}
    for key, field in spec.items():
        given = value.get(key)
        if given is None:
            if field.required:
                problems.add(join(path, key), field.required_message)
            out[key] = field.make_default()
        else:
            out[key] = field.check(given, join(path, key), problems)
    known = list(spec)
    for key, given in value.items():
        if key in spec:
            continue
        if strict:
            problems.add(join(path, key), unknown_key_message(key, known))
        else:
            out[key] = given
    return out


def section_defaults(spec: Spec) -> dict[str, Any]:
    return {key: field.make_default() for key, field in spec.items()}


def subsection(spec: Spec, check: Checker | None = None) -> Field:
    """A field holding a whole section; when absent or null it expands to the section's defaults."""
    return Field(check or section(spec), default=lambda: section_defaults(spec))
