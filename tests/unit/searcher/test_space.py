"""Hyperparameter sampling, grid axes (Determined's count rules), nesting and PBT explore."""

import random

import pytest

from stalwart.api.errors import ConfigError
from stalwart.searcher.space import HParamSpace, round_half_away


def axis(spec):
    return HParamSpace({"x": spec}).grid_axes()[0]


@pytest.mark.parametrize(
    "spec, points",
    [
        ({"type": "int", "minval": 1, "maxval": 3, "count": 5}, [1, 2, 3]),  # clipped to max-min+1
        ({"type": "int", "minval": 0, "maxval": 10, "count": 3}, [0, 5, 10]),
        ({"type": "int", "minval": 0, "maxval": 3, "count": 3}, [0, 2, 3]),  # 1.5 rounds half away
        ({"type": "int", "minval": 1, "maxval": 4, "count": 1}, [3]),  # rounded midpoint of 2.5
        ({"type": "int", "minval": -4, "maxval": -1, "count": 1}, [-3]),  # -2.5 rounds away from 0
        ({"type": "int", "minval": 0, "maxval": 100, "count": 5}, [0, 25, 50, 75, 100]),
        ({"type": "int", "minval": 0, "maxval": 10, "count": 4}, [0, 3, 7, 10]),  # 3.33, 6.67
        ({"type": "double", "minval": 0, "maxval": 1, "count": 3}, [0.0, 0.5, 1.0]),
        ({"type": "double", "minval": -1, "maxval": 3, "count": 1}, [1.0]),
        ({"type": "categorical", "vals": ["a", [1, 2], {"k": 1}]}, ["a", [1, 2], {"k": 1}]),
        ({"type": "const", "val": {"deep": [1]}}, [{"deep": [1]}]),
    ],
)
def test_grid_axis_rules(spec, points):
    assert axis(spec) == points


def test_log_axis_is_base_to_the_linspace_of_exponents():
    three = {"type": "log", "minval": -3, "maxval": -1, "base": 10, "count": 3}
    assert axis(three) == pytest.approx([1e-3, 1e-2, 1e-1])
    assert axis({"type": "log", "minval": 1, "maxval": 5, "base": 2, "count": 1}) == pytest.approx([8.0])
    assert axis({"type": "log", "minval": 0, "maxval": 2, "count": 2}) == pytest.approx([1.0, 100.0])  # base 10


def test_round_half_away_from_zero_like_go():
    assert [round_half_away(x) for x in (0.5, 1.5, 2.5, -0.5, -2.5, 2.49)] == [1, 2, 3, -1, -3, 2]


NESTED = {
    "a": {"type": "int", "minval": 1, "maxval": 2, "count": 2},
    "k": {"type": "const", "val": 5},
    "g": {"h": {"c": {"type": "double", "minval": 0, "maxval": 1, "count": 2}},
          "b": {"type": "categorical", "vals": ["x", "y", "z"]}},
    "empty": {},
}


def test_grid_is_the_lexicographic_product_over_sorted_nested_leaves():
    space = HParamSpace(NESTED)
    assert [leaf.name for leaf in space.leaves] == ["a", "g.b", "g.h.c", "k"]
    grid = space.grid()
    assert space.grid_size() == len(grid) == 2 * 3 * 2
    assert grid[0] == {"a": 1, "empty": {}, "g": {"b": "x", "h": {"c": 0.0}}, "k": 5}
    assert grid[1] == {"a": 1, "empty": {}, "g": {"b": "x", "h": {"c": 1.0}}, "k": 5}
    assert grid[2]["g"]["b"] == "y"
    assert grid[-1] == {"a": 2, "empty": {}, "g": {"b": "z", "h": {"c": 1.0}}, "k": 5}
    assert len({repr(p) for p in grid}) == 12


def test_a_config_without_hyperparameters_is_a_single_empty_point():
    assert HParamSpace({}).grid() == [{}]
    assert HParamSpace({"g": {}}).grid() == [{"g": {}}]


def test_grid_needs_counts():
    with pytest.raises(ConfigError) as info:
        HParamSpace({"lr": {"type": "double", "minval": 0, "maxval": 1}}).grid_axes()
    assert info.value.details == ["hyperparameters.lr.count: required for the grid searcher"]


def test_sampling_stays_in_bounds_and_covers_int_ends():
    space = HParamSpace({
        "i": {"type": "int", "minval": -2, "maxval": 2},
        "d": {"type": "double", "minval": 0.5, "maxval": 0.75},
        "l": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
        "c": {"type": "categorical", "vals": [1, "two", [3]]},
        "n": {"m": {"type": "int", "minval": 0, "maxval": 1}, "k": 3},
    })
    rng = random.Random(1)
    points = [space.sample(rng) for _ in range(500)]
    assert {p["i"] for p in points} == {-2, -1, 0, 1, 2}
    assert all(0.5 <= p["d"] <= 0.75 for p in points)
    assert all(1e-4 <= p["l"] <= 1e-1 for p in points)
    assert {repr(p["c"]) for p in points} == {"1", "'two'", "[3]"}
    assert all(p["n"]["k"] == 3 and p["n"]["m"] in (0, 1) for p in points)


def test_sampling_is_deterministic_given_the_generator():
    space = HParamSpace(NESTED | {"d": {"type": "double", "minval": 0, "maxval": 1}})
    a = [space.sample(random.Random(5)) for _ in range(3)]
    b = [space.sample(random.Random(5)) for _ in range(3)]
    assert a == b
    assert space.sample(random.Random(5)) != space.sample(random.Random(6))


def test_raw_configs_are_accepted_as_const_leaves_and_groups():
    space = HParamSpace({"lr": 0.1, "layers": [1, 2], "opt": {"name": "sgd"}})
    assert space.sample(random.Random(0)) == {"layers": [1, 2], "lr": 0.1, "opt": {"name": "sgd"}}


BOUNDED = {
    "i": {"type": "int", "minval": 1, "maxval": 10},
    "d": {"type": "double", "minval": 0.0, "maxval": 1.0},
    "l": {"type": "log", "minval": -3, "maxval": 0, "base": 10},
    "c": {"type": "categorical", "vals": ["a", "b"]},
    "k": 7,
}


def test_explore_perturbs_by_the_factor_and_clips_to_bounds():
    space = HParamSpace(BOUNDED)
    old = {"i": 5, "d": 0.5, "l": 0.01, "c": "b", "k": 7}
    seen = set()
    for seed in range(40):
        new = space.explore(old, random.Random(seed), resample_probability=0.0, perturb_factor=0.2)
        assert new["i"] in (6, 4)  # ceil(5 * 1.2), floor(5 * 0.8)
        assert new["d"] == pytest.approx(0.6) or new["d"] == pytest.approx(0.4)
        assert new["l"] == pytest.approx(0.012) or new["l"] == pytest.approx(0.008)
        assert new["c"] == "b" and new["k"] == 7
        seen.add(new["i"])
    assert seen == {4, 6}
    edge = {"i": 10, "d": 1.0, "l": 1.0, "c": "a", "k": 7}
    for seed in range(20):
        new = space.explore(edge, random.Random(seed), resample_probability=0.0, perturb_factor=0.5)
        assert 1 <= new["i"] <= 10 and 0.0 <= new["d"] <= 1.0 and 1e-3 <= new["l"] <= 1.0


def test_explore_with_resample_probability_one_draws_from_the_prior():
    space = HParamSpace(BOUNDED)
    old = {"i": 5, "d": 0.5, "l": 0.01, "c": "b", "k": 7}
    cats = {space.explore(old, random.Random(s), 1.0, 0.2)["c"] for s in range(30)}
    assert cats == {"a", "b"}
