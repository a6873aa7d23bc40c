"""Asking for a secret (a password): hidden at a terminal; from a script, one line of standard input.

At a terminal the answer is never echoed. When standard input is not a terminal (`echo PW | stalwart user login
NAME`, a test), each answer is the next line of it, so scripts never hang on a prompt they cannot see.
"""

from __future__ import annotations

import sys

import click

from stalwart.api.errors import InvalidRequest


def secret(prompt: str) -> str:
    """One hidden answer (an empty one is allowed: it is how an empty password is given)."""
    if sys.stdin is not None and sys.stdin.isatty():
        return str(click.prompt(prompt, hide_input=True, default="", show_default=False))
    line = sys.stdin.readline() if sys.stdin is not None else ""
    if not line:
        raise click.exceptions.Abort()
    return line.rstrip("\r\n")


def new_secret(prompt: str) -> str:
    """A new password, asked twice; InvalidRequest when the two answers differ."""
    first = secret(prompt)
    if first != secret("Confirm " + prompt[:1].lower() + prompt[1:]):
        raise InvalidRequest("the two passwords differ: nothing was changed; try again")
    return first


def answer(prompt: str) -> str:
    """One plain (echoed) answer, such as a user name; a script gives it as the next line of standard input."""
    if sys.stdin is not None and sys.stdin.isatty():
        return str(click.prompt(prompt)).strip()
    line = sys.stdin.readline() if sys.stdin is not None else ""
    if not line.strip():
        raise click.exceptions.Abort()
    return line.strip()
