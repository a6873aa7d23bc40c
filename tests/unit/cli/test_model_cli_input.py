"""`stalwart model`'s --metadata values: KEY=VALUE (JSON values read as JSON) and JSON objects, merged; bad ones get
an error naming what to give."""

from __future__ import annotations

import pytest

from stalwart.api.errors import InvalidRequest
from stalwart.cli.model import metadata_of


def test_metadata_values_merge_key_values_and_json_objects() -> None:
    assert metadata_of(()) is None
    assert metadata_of(("epochs=2", "framework=torch", '{"lr": 0.1, "tags": ["a"]}', "note=a=b")) == \
        {"epochs": 2, "framework": "torch", "lr": 0.1, "tags": ["a"], "note": "a=b"}


@pytest.mark.parametrize("bad", ["no-equals", "=value", "{not json", "[1, 2]"])
def test_a_bad_metadata_value_is_refused_with_what_to_give(bad: str) -> None:
    with pytest.raises(InvalidRequest, match="--metadata"):
        metadata_of((bad,))
