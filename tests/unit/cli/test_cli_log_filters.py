"""The log filter options: --level means that level and above, --since takes durations, bad combinations are refused."""

from __future__ import annotations

import pytest

from stalwart.api.errors import InvalidRequest
from stalwart.api.states import LOG_LEVELS as LEVELS
from stalwart.cli.log_filters import LogFilter, make_filter, parse_since


@pytest.mark.parametrize(("text", "ago"), [("30s", 30), ("10m", 600), ("2h", 7200), ("1d", 86400), ("1.5h", 5400),
                                           (" 5 m ", 300)])
def test_a_duration_is_that_long_before_now(text: str, ago: float) -> None:
    assert parse_since(text, now=100_000.0) == 100_000.0 - ago


@pytest.mark.parametrize("text", ["1700000000", "1700000000.5", "2026-11-25T07:00:00Z", "yesterday"])
def test_anything_else_goes_to_the_master_as_written(text: str) -> None:
    assert parse_since(f" {text} ") == text


def test_level_keeps_that_level_and_the_more_severe_ones() -> None:
    assert make_filter("WARNING", None, None, None, None, follow=False).levels == ["WARNING", "ERROR", "CRITICAL"]
    assert make_filter("TRACE", None, None, None, None, follow=False).levels == list(LEVELS)
    assert make_filter(None, None, None, None, None, follow=False) == LogFilter()


def test_the_filter_becomes_the_clients_keyword_arguments() -> None:
    f = make_filter("ERROR", "1700000000", "loss", 5, None, follow=False)
    assert f.params() == {"levels": ["ERROR", "CRITICAL"], "since": "1700000000", "grep": "loss", "head": 5,
                          "tail": None}
    assert make_filter(None, None, "", None, None, follow=True).grep is None  # an empty --grep filters nothing


def test_head_and_tail_together_are_refused() -> None:
    with pytest.raises(InvalidRequest, match="only one of --head and --tail"):
        make_filter(None, None, None, 1, 1, follow=False)


def test_head_cannot_follow_but_tail_can() -> None:
    with pytest.raises(InvalidRequest, match="cannot be used with --follow"):
        make_filter(None, None, None, 3, None, follow=True)
    assert make_filter(None, None, None, None, 2, follow=True).tail == 2  # the last 2 lines, then the new ones
