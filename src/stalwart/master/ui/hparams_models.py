"""The page model of an experiment's hyperparameter charts (parallel coordinates, scatter plots): every trial's
flattened hyperparameters and best searcher metric, and how the config scales each axis."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.api.models.common import JsonObject
from stalwart.master.queries import experiments as experiment_queries, ui_experiments
from stalwart.master.series.index import MetricsIndex
from stalwart.master.service import Master
from stalwart.master.ui.models import flatten, ready_index
from stalwart.searcher.space import HParamSpace


def hparam_specs(config_hparams: Mapping[str, Any] | None) -> dict[str, JsonObject]:
    """{dotted name: {kind, ...}} of the config's hyperparameters: the range of int/double/log ones (log: the
    values' bounds and base), the values of categorical ones, the value of constants."""
    try:
        leaves = HParamSpace(config_hparams).leaves
    except ConfigError:
        return {}
    out: dict[str, JsonObject] = {}
    for leaf in leaves:
        spec: JsonObject = {"kind": leaf.kind}
        if leaf.kind in ("int", "double", "log"):
            spec.update(low=leaf.low(), high=leaf.high())
            if leaf.kind == "log":
                spec["base"] = leaf.base
        elif leaf.kind == "categorical":
            spec["vals"] = list(leaf.spec.get("vals") or [])
        else:
            spec["val"] = leaf.spec.get("val")
        out[leaf.name] = spec
    return out


def hparams_view(m: Master, idx: MetricsIndex | None, exp_id: int) -> JsonObject:
    """Every trial's flattened hyperparameters and its best searcher metric, for the hyperparameter charts.

    `hp_keys` are the hyperparameters that vary (an axis each, scaled as the config says: `hp_specs`);
    `constants` those every trial has the same (listed apart: an axis of one value would invent a range)."""
    built = ready_index(idx)
    with m.db.begin() as conn:
        row = experiment_queries.get(conn, exp_id)
        trials = ui_experiments.trial_hparams(conn, exp_id)
    searcher = row["config"].get("searcher", {})
    metric, smaller = searcher.get("metric"), searcher.get("smaller_is_better", True)
    out: list[JsonObject] = []
    for tid, state, hp in trials:
        best = built.trial_stats(tid, metric, smaller)["best_validation"] if built else None
        out.append({"id": tid, "state": state, "hparams": flatten(hp), "value": best["value"] if best else None})
    specs = hparam_specs(row["config"].get("hyperparameters"))
    constants: JsonObject = {}
    varying: list[str] = []
    for key in sorted({k for d in out for k in d["hparams"]} | set(specs)):
        values = [d["hparams"].get(key) for d in out]
        kind = specs.get(key, {}).get("kind")
        if kind == "const" or (kind is None and len({json.dumps(v, sort_keys=True, default=str) for v in values}) <= 1):
            constants[key] = values[0] if values else specs.get(key, {}).get("val")
        else:
            varying.append(key)
    return {"experiment_id": exp_id, "metric": metric, "smaller_is_better": smaller, "hp_keys": varying,
            "hp_specs": {k: specs[k] for k in varying if k in specs}, "constants": constants,
            "trials": out, "index_ready": built is not None}
