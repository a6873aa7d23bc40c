"""Durations and times as people type them (token lifespans, `audit list --since`), and what is refused."""

from __future__ import annotations

import datetime as dt

import pytest

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.users import Token
from stalwart.cli.durations import parse_duration, parse_when
from stalwart.cli.token import lifespan_seconds, state_of


@pytest.mark.parametrize(("text", "seconds"), [("3600", 3600), ("90m", 5400), ("12h", 43200), ("30d", 2_592_000),
                                               ("2w", 1_209_600), ("45s", 45), (" 1.5h ", 5400), ("12H", 43200)])
def test_a_duration_is_a_number_of_seconds_or_a_number_with_a_unit(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-5m", "12y", "1h30m", "h"])
def test_anything_else_is_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(InvalidRequest, match=r"lifespan .*expected a number of seconds, or a number with s, m, h"):
        parse_duration(text, "lifespan")


def test_a_lifespan_must_be_between_a_minute_and_ten_years() -> None:
    assert lifespan_seconds("60") == 60 and lifespan_seconds("3650d") == 3650 * 86400
    for text in ("59", "30s", "3651d"):
        with pytest.raises(InvalidRequest, match="from 1 minute .* to 10 years"):
            lifespan_seconds(text)


@pytest.mark.parametrize(("text", "ago"), [("30m", 1800), ("2h", 7200), ("7d", 604_800)])
def test_when_with_a_unit_is_that_long_ago(text: str, ago: float) -> None:
    assert parse_when(text, now=1_000_000.0) == 1_000_000.0 - ago


def test_when_is_epoch_seconds_or_an_iso_time() -> None:
    assert parse_when("1700000000") == 1_700_000_000.0
    assert parse_when("2026-11-25T10:00:00Z") == dt.datetime(2026, 11, 25, 10, tzinfo=dt.UTC).timestamp()
    assert parse_when("2026-11-25T10:00") == dt.datetime(2026, 11, 25, 10).timestamp()  # local time
    assert parse_when("2026-11-25") == dt.datetime(2026, 11, 25).timestamp()
    with pytest.raises(InvalidRequest, match=r"--since 'yesterday': expected a time ago \(30m, 2h, 7d\), an ISO"):
        parse_when("yesterday", "--since")


def test_a_token_is_active_until_it_expires_or_is_revoked() -> None:
    token = Token(id=1, username="a", createdAt=0.0, expiresAt=100.0)
    assert state_of(token, now=99.0) == "active"
    assert state_of(token, now=100.0) == "expired"
    assert state_of(Token(id=1, username="a", createdAt=0.0, expiresAt=100.0, revoked=True), now=0.0) == "revoked"
    assert state_of(Token(id=1, username="a", createdAt=0.0), now=1e12) == "active"
