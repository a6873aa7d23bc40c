"""Hyperparameter specs: const forms, nesting, ranged types, and searcher-specific rules."""

from __future__ import annotations

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config import iter_leaves, resolve_const_hparams


def test_const_forms_and_nesting_are_normalised(minimal, expand):
    minimal["hyperparameters"] = {
        "lr": 0.1,
        "layers": [64, 32],
        "opt": {"type": "const", "val": "sgd"},
        "model": {"width": 64, "block": {"depth": 3, "act": {"type": "const", "val": "relu"}}},
        "empty": {},
    }
    hp = expand(minimal)["hyperparameters"]
    assert hp == {
        "lr": {"type": "const", "val": 0.1},
        "layers": {"type": "const", "val": [64, 32]},
        "opt": {"type": "const", "val": "sgd"},
        "model": {
            "width": {"type": "const", "val": 64},
            "block": {"depth": {"type": "const", "val": 3}, "act": {"type": "const", "val": "relu"}},
        },
        "empty": {},
    }
    assert resolve_const_hparams(hp) == {
        "lr": 0.1,
        "layers": [64, 32],
        "opt": "sgd",
        "model": {"width": 64, "block": {"depth": 3, "act": "relu"}},
        "empty": {},
    }


def test_resolve_raw_spec():
    raw = {"lr": 0.1, "opt": {"type": "const", "val": "sgd"}, "model": {"width": 64}}
    assert resolve_const_hparams(raw) == {"lr": 0.1, "opt": "sgd", "model": {"width": 64}}
    assert resolve_const_hparams(None) == {}


def test_resolve_rejects_non_const():
    with pytest.raises(ConfigError) as info:
        resolve_const_hparams({"m": {"lr": {"type": "log", "minval": -3, "maxval": -1}}})
    assert info.value.details == [
        "hyperparameters.m.lr: expected a const hyperparameter, got type 'log'"
    ]


def test_ranged_types_get_defaults(minimal, expand):
    minimal["searcher"] = {"name": "random", "metric": "loss", "max_trials": 4}
    minimal["hyperparameters"] = {
        "units": {"type": "int", "minval": 8, "maxval": 64},
        "dropout": {"type": "double", "minval": 0.1, "maxval": 0.5, "count": 3},
        "lr": {"type": "log", "minval": -4, "maxval": -1},
        "act": {"type": "categorical", "vals": ["relu", "tanh"]},
    }
    hp = expand(minimal)["hyperparameters"]
    assert hp["units"] == {"type": "int", "minval": 8, "maxval": 64, "count": None}
    assert hp["lr"] == {"type": "log", "minval": -4, "maxval": -1, "base": 10.0, "count": None}
    assert hp["act"] == {"type": "categorical", "vals": ["relu", "tanh"]}
    assert [p for p, _ in iter_leaves(hp)] == [
        "hyperparameters.units",
        "hyperparameters.dropout",
        "hyperparameters.lr",
        "hyperparameters.act",
    ]


@pytest.mark.parametrize(
    ("spec", "detail"),
    [
        ({"type": "double", "minval": 1.0, "maxval": 0.1},
         "hyperparameters.x.minval: must be less than maxval (got 1.0 >= 0.1)"),
        ({"type": "int", "minval": 5, "maxval": 5}, "hyperparameters.x.minval: must be less than maxval (got 5 >= 5)"),
        ({"type": "int", "minval": 1.5, "maxval": 5}, "hyperparameters.x.minval: expected an integer, got 1.5"),
        ({"type": "int", "minval": 1, "maxval": 5, "count": 0},
         "hyperparameters.x.count: expected an integer >= 1, got 0"),
        ({"type": "double", "maxval": 5}, "hyperparameters.x.minval: required"),
        ({"type": "log", "minval": 1, "maxval": 2, "base": 0}, "hyperparameters.x.base: expected a number > 0, got 0"),
        ({"type": "log", "minval": "a", "maxval": 2}, "hyperparameters.x.minval: expected a number, got 'a'"),
        ({"type": "categorical", "vals": []}, "hyperparameters.x.vals: must be a non-empty list"),
        ({"type": "categorical"}, "hyperparameters.x.vals: required"),
        ({"type": "categorical", "vals": "abc"}, "hyperparameters.x.vals: expected a list, got 'abc'"),
        ({"type": "const"}, "hyperparameters.x.val: required"),
        ({"type": "uniform", "minval": 1},
         "hyperparameters.x.type: expected one of const, int, double, log, categorical, got 'uniform'"),
        ({"type": "int", "minval": 1, "maxval": 3, "cout": 2},
         "hyperparameters.x.cout: unknown key; did you mean 'count'?"),
    ],
)  # fmt: skip
def test_hyperparameter_errors(minimal, problems, spec, detail):
    minimal["searcher"] = {"name": "random", "metric": "loss", "max_trials": 2}
    minimal["hyperparameters"] = {"nested": {"ok": 1}, "x": spec}
    assert problems(minimal) == [detail]


def test_nested_error_path(minimal, problems):
    minimal["searcher"] = {"name": "random", "metric": "loss", "max_trials": 2}
    minimal["hyperparameters"] = {"a": {"b": {"c": {"type": "int", "minval": 3, "maxval": 1}}}}
    assert problems(minimal) == [
        "hyperparameters.a.b.c.minval: must be less than maxval (got 3 >= 1)"
    ]


def test_single_searcher_takes_non_const_hyperparameters(minimal, expand):
    # Determined's single searcher samples them once, as random with max_trials 1 does
    minimal["hyperparameters"] = {
        "lr": 0.1,
        "model": {"act": {"type": "categorical", "vals": ["a", "b"]}},
        "units": {"type": "int", "minval": 1, "maxval": 4},
    }
    assert expand(minimal)["hyperparameters"]["units"] == {"type": "int", "minval": 1, "maxval": 4, "count": None}


def test_grid_needs_count(minimal, problems, expand):
    minimal["searcher"] = {"name": "grid", "metric": "loss"}
    minimal["hyperparameters"] = {
        "units": {"type": "int", "minval": 1, "maxval": 4},
        "opt": {"lr": {"type": "log", "minval": -3, "maxval": -1}},
        "act": {"type": "categorical", "vals": ["a", "b"]},
        "seed": 3,
    }
    assert problems(minimal) == [
        "hyperparameters.units.count: required for the grid searcher",
        "hyperparameters.opt.lr.count: required for the grid searcher",
    ]
    minimal["hyperparameters"]["units"]["count"] = 4
    minimal["hyperparameters"]["opt"]["lr"]["count"] = 3
    assert expand(minimal)["hyperparameters"]["opt"]["lr"]["count"] == 3
