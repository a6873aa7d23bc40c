"""Log policy patterns, compiled as Determined compiles them: RE2 (Go's regexp syntax). RE2 matches in time linear
in the line, so no pattern a user gives can stall the master's log intake (a backtracking pattern such as `(a+)+$`
would, with Python's `re`). google-re2 comes with the master extra; where it is missing (a client-only install
checking a config before sending it) Python's `re` checks the syntax, and the master checks again with RE2."""

from __future__ import annotations

from typing import Any, Protocol


class Pattern(Protocol):
    def search(self, text: str) -> Any: ...


try:
    import re2 as _engine  # type: ignore[import-untyped]  # google-re2 ships no type stubs

    _ENGINE_ERROR: type[Exception] = _engine.error
except ImportError:  # pragma: no cover - the master extra always installs google-re2
    import re as _engine

    _ENGINE_ERROR = _engine.error


class PatternError(ValueError):
    """A pattern that does not compile; the message is the engine's."""


def compile_pattern(pattern: str) -> Pattern:
    """`pattern` compiled for `search` (a match anywhere in the line, as Go's MatchString)."""
    try:
        compiled: Pattern = _engine.compile(pattern)
    except _ENGINE_ERROR as err:
        raise PatternError(_reason(err)) from None
    return compiled


def _reason(err: Exception) -> str:
    """re2's errors carry the parser's message as bytes."""
    first = err.args[0] if err.args else err
    return first.decode(errors="replace") if isinstance(first, bytes) else str(first)
