"""The rules of a model's name (Determined's): not blank, no runs of spaces, no slashes, not all digits."""

from __future__ import annotations

from stalwart.api.errors import InvalidRequest


def problem(name: str) -> str | None:
    """What is wrong with `name` as a model's name, in words; None when nothing is."""
    if not name.replace(" ", ""):
        return "it is blank"
    if name != name.strip():
        return "it starts or ends with a space"
    if "  " in name:
        return "it has two spaces in a row"
    if "/" in name or "\\" in name:
        return "it has a slash ('/' or '\\')"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it has a control character"
    if name.isascii() and name.isdigit():
        return "it is only digits (a path naming a model by digits names it by id)"
    return None


def check(name: str) -> str:
    """`name` when it is a valid model name; InvalidRequest (400) saying what is wrong otherwise."""
    found = problem(name)
    if found is not None:
        raise InvalidRequest(f"name: {name!r} cannot be a model's name: {found}; choose another")
    return name
