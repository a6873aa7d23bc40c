"""Passwords from a script: each answer is a line of standard input; a new one must be given twice alike; no
answer at all is an abort (exit 130), never a hang."""

from __future__ import annotations

import io

import click
import pytest

from stalwart.api.errors import InvalidRequest
from stalwart.cli import prompts


def test_each_answer_is_the_next_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("old secret\n\nnew one\nnew one\n"))
    assert prompts.secret("Current password") == "old secret"
    assert prompts.secret("Password") == ""  # an empty line is an empty password
    assert prompts.new_secret("New password") == "new one"


def test_a_new_password_given_differently_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("one\ntwo\n"))
    with pytest.raises(InvalidRequest, match="the two passwords differ"):
        prompts.new_secret("New password")


def test_no_answer_aborts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(click.exceptions.Abort):
        prompts.secret("Password")
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    with pytest.raises(click.exceptions.Abort):
        prompts.answer("Username")
