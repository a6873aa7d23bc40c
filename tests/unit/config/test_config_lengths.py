"""Length maps (`{batches|records|epochs: N}`) and the bare-int `searcher.max_length`."""

from __future__ import annotations

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config import Length, parse_length


@pytest.mark.parametrize("unit", ["batches", "records", "epochs"])
def test_parse_each_unit(unit):
    assert parse_length({unit: 12}) == Length(unit, 12)
    assert Length(unit, 12).to_dict() == {unit: 12}


def test_bare_int_only_when_allowed():
    assert parse_length(100, "searcher.max_length", allow_bare_int=True) == Length("batches", 100)
    with pytest.raises(ConfigError) as info:
        parse_length(100, "min_validation_period")
    assert info.value.details == [
        "min_validation_period: expected a length like {batches: 100}, got 100"
    ]


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        ({}, "p: a length needs exactly one of batches, records, epochs (got none)"),
        ({"batches": 1, "epochs": 2},
         "p: a length needs exactly one of batches, records, epochs (got batches, epochs)"),
        ({"batch": 1}, "p.batch: unknown key; did you mean 'batches'?"),
        ({"steps": 1}, "p.steps: unknown key"),
        ({"epochs": -1}, "p.epochs: expected an integer >= 0, got -1"),
        ({"epochs": "3"}, "p.epochs: expected an integer >= 0, got '3'"),
        ("3 epochs", "p: expected a length like {batches: 100}, got '3 epochs'"),
    ],
)  # fmt: skip
def test_bad_lengths(value, detail):
    with pytest.raises(ConfigError) as info:
        parse_length(value, "p")
    assert info.value.details == [detail]


def test_length_is_frozen():
    with pytest.raises(AttributeError):
        Length("batches", 1).value = 2  # type: ignore[misc]


def test_config_lengths(minimal, expand, problems):
    minimal["min_validation_period"] = {"epochs": 1}
    minimal["searcher"]["max_length"] = 500
    cfg = expand(minimal)
    assert cfg["min_validation_period"] == {"epochs": 1}
    assert cfg["searcher"]["max_length"] == {"batches": 500}
    minimal["min_checkpoint_period"] = 5
    minimal["searcher"]["max_length"] = {"records": -3}
    assert problems(minimal) == [
        "searcher.max_length.records: expected an integer >= 0, got -3",
        "min_checkpoint_period: expected a length like {batches: 100}, got 5",
    ]
