"""`--test-mode`: turn an experiment config into a short smoke test (one batch, a validation, a checkpoint)."""

from __future__ import annotations

import copy
import random
from typing import Any

from stalwart.config.hyperparameters import is_leaf, leaf_type
from stalwart.config.source import read_source


def _sample(spec: Any, rng: random.Random) -> Any:
    """One value of a hyperparameter leaf, as the smoke test's constant."""
    if not isinstance(spec, dict) or "type" not in spec:
        return spec
    kind = leaf_type(spec)
    if kind == "const":
        return spec.get("val")
    if kind == "int":
        return rng.randint(int(spec["minval"]), int(spec["maxval"]))
    if kind == "double":
        return rng.uniform(float(spec["minval"]), float(spec["maxval"]))
    if kind == "log":
        return float(spec.get("base", 10)) ** rng.uniform(float(spec["minval"]), float(spec["maxval"]))
    if kind == "categorical":
        return rng.choice(list(spec["vals"]))
    return spec


def _sample_all(hparams: Any, rng: random.Random) -> Any:
    if not isinstance(hparams, dict):
        return hparams
    out = {}
    for name, spec in hparams.items():
        if is_leaf(spec):
            value = _sample(spec, rng)
            out[name] = {"type": "const", "val": value} if isinstance(value, (dict, list)) else value
        else:
            out[name] = _sample_all(spec, rng)
    return out


def test_mode_config(source: str | dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """Determined's test-mode rewrite: single searcher, one batch, validate and checkpoint at once, no restarts."""
    cfg = copy.deepcopy(read_source(source))
    searcher = dict(cfg.get("searcher") or {})
    cfg["searcher"] = {
        "name": "single",
        "metric": searcher.get("metric"),
        "smaller_is_better": searcher.get("smaller_is_better", True),
        "max_length": {"batches": 1},
    }
    cfg["scheduling_unit"] = 1
    cfg["min_validation_period"] = {"batches": 1}
    cfg["min_checkpoint_period"] = {"batches": 1}
    cfg["max_restarts"] = 0
    storage = dict(cfg.get("checkpoint_storage") or {})
    storage.update({"save_experiment_best": 0, "save_trial_best": 0, "save_trial_latest": 0})
    cfg["checkpoint_storage"] = storage
    cfg["hyperparameters"] = _sample_all(cfg.get("hyperparameters") or {}, random.Random(seed))
    cfg["name"] = f"{cfg.get('name') or 'experiment'} (test mode)"
    cfg["labels"] = [*(cfg.get("labels") or []), "test-mode"]
    return cfg
