"""Non-finite metric values on the wire and in storage: the strings "NaN", "Infinity" and "-Infinity".

JSON has no NaN or infinities (httpx refuses to send them, PostgreSQL's JSONB and SQLite's json
functions refuse to read them), so they travel and are stored as Determined's wire form: the same
three strings protobuf's JSON mapping uses. `encode` turns floats into that form, `number` reads a
stored value back as a float (for searchers), or None when it is not a number. docs/metrics.md.
"""

from __future__ import annotations

import math
from typing import Any

NAN, INFINITY, NEG_INFINITY = "NaN", "Infinity", "-Infinity"
NON_FINITE = {NAN: math.nan, INFINITY: math.inf, NEG_INFINITY: -math.inf}


def encode_float(value: float) -> float | str:
    """A finite float as it is; NaN and the infinities as their strings."""
    if value - value == 0:  # false only for NaN and +-inf
        return value
    if value != value:
        return NAN
    return INFINITY if value > 0 else NEG_INFINITY


def encode(value: Any) -> Any:
    """`value` with every non-finite float (also inside dicts and lists) replaced by its string."""
    if value.__class__ is float:
        return encode_float(value)
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def number(value: Any) -> float | None:
    """A metric value as a float: numbers (not booleans) and the three strings; None for anything else."""
    if isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer beyond float range
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        return NON_FINITE.get(value)
    return None
