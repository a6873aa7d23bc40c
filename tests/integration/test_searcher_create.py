"""A bad searcher section is refused by the master's create route, once, with the field's dotted path."""

from __future__ import annotations

import pytest

from integration.helpers import create, digits_config
from stalwart.api.errors import ConfigError

pytestmark = pytest.mark.integration

T = {"max_time": 100, "time_metric": "batches"}
BAD = [
    ({"name": "pbt", "metric": "m", "population_size": 2, "num_rounds": 2, "length_per_round": 50,
      "replace_function": {"truncate_fraction": 0.9}},
     "searcher.replace_function.truncate_fraction: expected a number in 0..0.5, got 0.9"),
    ({"name": "adaptive_asha", "metric": "m", "max_trials": 2, "max_length": {"batches": 0}},
     "searcher.max_length.batches: expected an integer >= 1, got 0"),
    ({"name": "hyperband", "metric": "m", "divisor": 1, **T}, "searcher.divisor: expected a number > 1, got 1"),
    ({"name": "sync_halving", "metric": "m"}, "searcher.name: 'sync_halving' is end-of-life in Determined"),
]


def test_bad_searchers_are_refused_at_create_naming_the_field_and_nothing_is_stored(cluster):
    for searcher, detail in BAD:
        with pytest.raises(ConfigError) as info:
            create(cluster, digits_config(searcher=searcher))
        assert any(detail in d for d in info.value.details), (detail, info.value.details)
    assert cluster.client().get("/experiments")["total"] == 0
