"""The rules of a model's name (master/registry/names.py), as Determined's: each refusal says what is wrong."""

from __future__ import annotations

import pytest

from stalwart.api.errors import InvalidRequest
from stalwart.master.registry import names


@pytest.mark.parametrize(("name", "why"), [
    ("", "blank"), ("   ", "blank"), (" lead", "starts or ends"), ("a  b", "two spaces"), ("a/b", "slash"),
    ("a\\b", "slash"), ("a\tb", "control"), ("0042", "only digits"),
])
def test_a_bad_name_is_refused_saying_why(name: str, why: str) -> None:
    with pytest.raises(InvalidRequest, match=why):
        names.check(name)


@pytest.mark.parametrize("name", ["mnist", "digits cnn v2", "42-layers", "modèle", "٣"])
def test_a_good_name_passes(name: str) -> None:
    assert names.check(name) == name
