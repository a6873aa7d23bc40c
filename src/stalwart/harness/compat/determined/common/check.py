"""`determined.common.check`: Determined's runtime checks, raising `CheckFailedError` with its messages.

Each check has two names, as in Determined 0.38.1 (`check.eq(...)` and `check.check_eq(...)`); every
message starts "CHECK FAILED! " and ends ": <reason>" when a reason is given.
"""

from __future__ import annotations

from collections.abc import Container, Sized
from typing import Any, NoReturn


class CheckFailedError(Exception):
    """A check of `determined.common.check` did not hold."""


def _fail(detail: str, reason: str | None) -> NoReturn:
    message = f"CHECK FAILED! {detail}"
    raise CheckFailedError(message if reason is None else f"{message}: {reason}")


def true(val: bool, reason: str | None = None) -> None:
    if not val:
        _fail(f"Got {val}, expected True", reason)


def false(val: bool, reason: str | None = None) -> None:
    if val:
        _fail(f"Got {val}, expected False", reason)


def is_none(val: Any, reason: str | None = None) -> None:
    if val is not None:
        _fail(f"Got {val}, expected None", reason)


def is_not_none(val: Any, reason: str | None = None) -> None:
    if val is None:
        _fail(f"Got {val}, expected non-None", reason)


def eq(val: Any, expected: Any, reason: str | None = None) -> None:
    if val == expected:  # `==`, not `!=`, decides, as in Determined
        return
    _fail(f"Got {val}, expected {expected}", reason)


def not_eq(x: Any, y: Any, reason: str | None = None) -> None:
    if x != y:
        return
    _fail(f"Got {x}, expected value != {y}", reason)


def gt(x: Any, y: Any, reason: str | None = None) -> None:
    if not x > y:
        _fail(f"Got {x}, expected value > {y}", reason)


def gt_eq(x: Any, y: Any, reason: str | None = None) -> None:
    if not x >= y:
        _fail(f"Got {x}, expected value >= {y}", reason)


def lt(x: Any, y: Any, reason: str | None = None) -> None:
    if not x < y:
        _fail(f"Got {x}, expected value < {y}", reason)


def lt_eq(x: Any, y: Any, reason: str | None = None) -> None:
    if not x <= y:
        _fail(f"Got {x}, expected value <= {y}", reason)


def equal_lengths(x: Sized, y: Sized, reason: str | None = None) -> None:
    if len(x) != len(y):
        _fail(f"Expected lengths {len(x)} and {len(y)} to be equal; values: {x}, {y}", reason)


def len_eq(val: Sized, expected_len: int, reason: str | None = None) -> None:
    """Unlike the other checks, the values follow the reason: "...: <reason>. Values: <val>"."""
    if len(val) != expected_len:
        message = f"CHECK FAILED! Got length {len(val)}, expected length {expected_len}"
        if reason is not None:
            message += f": {reason}"
        raise CheckFailedError(f"{message}. Values: {val}")


def is_in(val: Any, expected: Container[Any], reason: str | None = None) -> None:
    """A dict is shown by its keys only."""
    if val not in expected:
        shown = list(expected.keys()) if isinstance(expected, dict) else expected
        _fail(f"'{val}' is not in {shown}", reason)


def not_in(val: Any, expected: Container[Any], reason: str | None = None) -> None:
    if val in expected:
        _fail(f"Got {val}, expected value not in {expected}", reason)


def is_type(val: Any, expected: type, reason: str | None = None) -> None:
    """The exact type, not a subclass (use `is_instance` for that)."""
    if type(val) != expected:  # noqa: E721 - an exact type match is this check's point
        _fail(f"{val} has type {type(val)}, expected type {expected}", reason)


def is_instance(val: Any, expected: type | tuple[type, ...], reason: str | None = None) -> None:
    if not isinstance(val, expected):
        _fail(f"{val} has type {type(val)}, expected isinstance of {expected}", reason)


def is_not_instance(val: Any, expected: type | tuple[type, ...], reason: str | None = None) -> None:
    if isinstance(val, expected):
        _fail(f"{val} has type {type(val)}, expected not isinstance of {expected}", reason)


def is_subclass(val: Any, expected: type, reason: str | None = None) -> None:
    if not issubclass(val, expected):
        _fail(f"{val} has type {type(val)}, expected issubclass of {expected}", reason)


check_true = true
check_false = false
check_none = is_none
check_not_none = is_not_none
check_eq = eq
check_not_eq = not_eq
check_gt = gt
check_gt_eq = gt_eq
check_lt = lt
check_lt_eq = lt_eq
check_eq_len = equal_lengths
check_len = len_eq
check_in = is_in
check_not_in = not_in
check_type = is_type
check_isinstance = is_instance
check_not_isinstance = is_not_instance
check_issubclass = is_subclass
