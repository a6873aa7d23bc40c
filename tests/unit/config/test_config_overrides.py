"""`--config KEY=VALUE` overrides, following Determined's CLI rules."""

from __future__ import annotations

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config import apply_overrides

BASE = "name: exp\nsearcher:\n  name: single\n  metric: loss\n"


def test_dotted_path_and_yaml_scalars():
    cfg = apply_overrides(
        BASE,
        [
            "searcher.name=random",
            "searcher.max_trials=3",
            "resources.slots_per_trial=2",
            "debug=true",
            "hyperparameters.lr=0.01",
            "description=hello world",
        ],
    )
    assert cfg["searcher"] == {"name": "random", "metric": "loss", "max_trials": 3}
    assert cfg["resources"] == {"slots_per_trial": 2}
    assert cfg["debug"] is True
    assert cfg["hyperparameters"] == {"lr": 0.01}
    assert cfg["description"] == "hello world"


def test_comma_makes_a_list():
    cfg = apply_overrides(BASE, ["labels=a,b,3", "environment.environment_variables=A=1,B=2"])
    assert cfg["labels"] == ["a", "b", 3]
    assert cfg["environment"]["environment_variables"] == ["A=1", "B=2"]


def test_bracket_and_brace_values_are_yaml():
    cfg = apply_overrides(
        BASE,
        [
            "searcher.bracket_rungs=[1, 2]",
            "searcher.max_length={batches: 100}",
            "bind_mounts={host_path: /data, container_path: /data}",
        ],
    )
    assert cfg["searcher"]["bracket_rungs"] == [1, 2]
    assert cfg["searcher"]["max_length"] == {"batches": 100}
    assert cfg["bind_mounts"] == [{"host_path": "/data", "container_path": "/data"}]


def test_bind_mounts_list_is_not_wrapped():
    cfg = apply_overrides({}, ["bind_mounts=[{host_path: /a, container_path: /b}]"])
    assert cfg["bind_mounts"] == [{"host_path": "/a", "container_path": "/b"}]


def test_empty_value_is_null_and_later_override_wins():
    cfg = apply_overrides(BASE, ["description=", "name=a", "name=b"])
    assert cfg["description"] is None
    assert cfg["name"] == "b"


def test_source_dict_is_not_modified():
    source = {"searcher": {"name": "single"}}
    apply_overrides(source, ["searcher.metric=loss"])
    assert source == {"searcher": {"name": "single"}}


def test_null_intermediate_becomes_a_map():
    assert apply_overrides("resources: null\n", ["resources.weight=2"]) == {"resources": {"weight": 2}}


def test_bad_overrides_are_all_reported():
    with pytest.raises(ConfigError) as info:
        apply_overrides(
            BASE,
            ["noequals", "=5", "name.x=1", "searcher..metric=a", "searcher.metric.deep=1", "labels=[a"],
        )
    assert info.value.message == "invalid --config override (6 problems)"
    details = info.value.details
    assert details[:5] == [
        "noequals: expected KEY=VALUE (a dotted key such as searcher.max_trials)",
        "=5: the key before '=' must be a non-empty dotted path",
        "name.x=1: name is a string, not a mapping",
        "searcher..metric=a: the key before '=' must be a non-empty dotted path",
        "searcher.metric.deep=1: searcher.metric is a string, not a mapping",
    ]
    assert details[5].startswith("labels=[a: value is not valid YAML (")


def test_single_bad_override_message():
    with pytest.raises(ConfigError) as info:
        apply_overrides(BASE, ["oops"])
    assert info.value.message == "invalid --config override (1 problem)"


def test_malformed_source_is_reported():
    with pytest.raises(ConfigError) as info:
        apply_overrides("a: [1\n", ["b=1"])
    assert "malformed YAML" in info.value.message
