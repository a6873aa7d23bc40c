"""Preview a search (`det preview-search`), its budget, and where its trials are judged; the simulation's face.

`preview(config)` runs `simulate` with a random (seeded) metric and summarises how many trials
train to which length: the equivalent of `det preview-search`. Its trials validate where the
config's `min_validation_period` puts validations, and it warns about every rung a trial must be
judged at before the end of its training that falls between those validations. `budget(config)` is
the units that run trains.

`simulate` itself (a searcher against a synthetic objective with simulated workers and clock) is
`stalwart.searcher.simulation`'s; its names are importable from here too.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stalwart.config import LENGTH_UNITS, Length, SearcherSettings, TrialLength, parse_length, searcher_settings, views
from stalwart.searcher.base import Create, Resume, SearchMethod
from stalwart.searcher.simulation import SimTrial, SimulatedExit, SimulationResult, judged_at, simulate, trial_length

__all__ = ["Preview", "SimTrial", "SimulatedExit", "SimulationResult", "budget", "judged_at", "preview",
           "rung_warnings", "simulate", "validation_every", "validation_period"]


# -- preview ----------------------------------------------------------------------------------------


@dataclass
class Preview:
    """What a search would do, from a simulation with random metrics."""

    searcher: str
    total_trials: int
    unit: str
    rows: list[tuple[int, int]]  # (trials, trained length), shortest first
    brackets: list[dict[str, Any]]  # per bracket: rung lengths and how many trials reached each rung
    validations: str = ""  # where the simulated trials validate, when the searcher judges them at rungs
    warnings: list[str] = field(default_factory=list)  # rungs that fall between the config's validations

    def text(self) -> str:
        lines = [f"Searcher: {self.searcher}",
                 f"This search will create a total of {self.total_trials} trial(s).", ""]
        width = max([len("Trials")] + [len(str(n)) for n, _ in self.rows])
        lines.append(f"{'Trials':>{width}} | Training length ({self.unit})")
        lines.append("-" * (width + 1) + "+" + "-" * 24)
        for n, length in self.rows:
            lines.append(f"{n:>{width}} | {length}")
        if self.validations:
            lines += ["", self.validations]
        for i, bracket in enumerate(self.brackets):
            lines.append("")
            lines.append(f"Bracket {i} ({len(bracket['rungs'])} rungs, up to {bracket['max_trials']} trials):")
            for r, rung in enumerate(bracket["rungs"]):
                lines.append(f"  rung {r}: {rung['trials']} trial(s) train to {rung['length']} {self.unit}")
        return "\n".join(lines)


def preview(config: Mapping[str, Any], *, max_workers: int | None = None, seed: int | None = None) -> Preview:
    """Simulate the search with a random metric (seeded by `seed` or the experiment seed), its trials validating
    where the config's `min_validation_period` puts validations."""
    from stalwart.searcher.factory import make_search_method

    base = seed if seed is not None else (views.experiment_seed(config) or 0)

    def metric_fn(hparams: dict[str, Any], step: float) -> float:
        rng = random.Random(f"{base}:{json.dumps(hparams, sort_keys=True, default=str)}")
        return rng.random() + 0.0 * step

    search = make_search_method(config)
    settings = search.settings or searcher_settings(config)
    mct = getattr(settings, "max_concurrent_trials", None)
    workers = max_workers or (mct if isinstance(mct, int) and mct > 0 else 16)
    length = trial_length(settings)
    unit = length.time_metric if length else None
    period = validation_period(config)
    every = validation_every(config, settings)
    result = simulate(config, metric_fn, max_workers=workers, search=search, validation_period=every)
    rows = [(n, units) for units, n in result.lengths().items()]
    rungs = search.milestones() if length else []
    ends = _ends(result, length) if length else set()
    warnings = rung_warnings(rungs, ends, period, unit) if unit else []
    return Preview(settings.name, len(result.trials), unit or "units", rows, _brackets(search, result),
                   _validations(rungs, ends, every, unit), warnings)


def _brackets(search: SearchMethod, result: SimulationResult) -> list[dict[str, Any]]:
    """Per bracket of a bracketed searcher: its rung lengths, how many trials reached each, its trials."""
    brackets: list[dict[str, Any]] = []
    describe = getattr(search, "describe", None)
    owner = getattr(search, "owner", None)
    if callable(describe) and isinstance(owner, dict):
        for index, info in enumerate(describe()):
            mine = [t for rid, t in result.trials.items() if owner.get(rid) == index]
            rungs = [{"length": length, "trials": sum(1 for t in mine if t.step >= length - 1e-9)}
                     for length in info["rung_lengths"]]
            brackets.append({"rungs": rungs, "max_trials": info["max_trials"]})
    return brackets


# -- validations and rungs ----------------------------------------------------------------------------


def validation_period(config: Mapping[str, Any]) -> Length | None:
    """The config's `min_validation_period`, or None when it is absent or 0 (no periodic validation)."""
    value = config.get("min_validation_period")
    if value is None:
        return None
    period = parse_length(value, "min_validation_period", allow_bare_int=True)
    return period if period.value > 0 else None


def validation_every(config: Mapping[str, Any], settings: SearcherSettings | None = None) -> int | None:
    """`min_validation_period` in units of the searcher's time metric, when it is set in that unit: what
    `simulate(validation_period=...)` takes to validate where real trials do. None: where is not known."""
    length = trial_length(settings or searcher_settings(config))
    period = validation_period(config)
    return period.value if length is not None and period is not None and period.unit == length.time_metric else None


def _ends(result: SimulationResult, length: TrialLength) -> set[int]:
    """The lengths trials were asked to train to (each `Create` and `Resume`): a trial validates at each."""
    ends = {length.units}
    for _, action in result.actions:
        if isinstance(action, (Create, Resume)) and action.length is not None:
            ends.add(int(action.length))
    return ends


def _validations(rungs: list[int], ends: set[int], every: int | None, unit: str | None) -> str:
    """The preview's line on where its trials validate: none for searchers without rungs, and none with no period
    for those that judge trials only at the end of what they asked for (`ends`)."""
    if not rungs:
        return ""
    if every is not None:
        return f"Trials validate every {every} {unit} (min_validation_period) and at the end of their training."
    if all(r in ends for r in rungs):
        return ""
    return "Trials are assumed to validate at every rung (min_validation_period does not say where they do)."


def _and(values: list[int]) -> str:
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def rung_warnings(rungs: list[int], ends: set[int], period: Length | None, unit: str) -> list[str]:
    """Warnings about the rungs where a trial is judged before the end of its training (`ends`: the lengths it
    is asked to train to, where it always validates) that the validation `period` does not put a validation on.

    A searcher judges a trial at a rung at its first validation at or past the rung; a rung between two
    validations is judged later, on more training than the preview's rung length says."""
    mid = sorted(r for r in set(rungs) if r not in ends)
    if not mid or unit not in LENGTH_UNITS:
        return []
    one = len(mid) == 1
    where = f"{'rung' if one else 'rungs'} at {_and(mid)} {unit}"
    fix = f"set min_validation_period to {math.gcd(*mid)} {unit} (or a divisor of each rung)"
    if period is None:
        return [f"{where} {'needs' if one else 'need'} a validation there, but min_validation_period is not set: "
                f"a trial is judged at its first validation at or past a rung (a PyTorchTrial validates only at "
                f"the end of its training, so none would stop early); this preview assumes one on every rung; {fix}"]
    if period.unit != unit:
        return [f"{where} {'needs' if one else 'need'} a validation there, but min_validation_period is in "
                f"{period.unit}: this preview cannot tell where validations fall and assumes one on every rung; {fix}"]
    missed = [r for r in mid if r % period.value]
    if not missed:
        return []
    judged = sorted({min(judged_at(r, period.value), min((e for e in ends if e >= r), default=r)) for r in missed})
    one = len(missed) == 1
    return [f"{'rung' if one else 'rungs'} at {_and(missed)} {unit} {'falls' if one else 'fall'} between "
            f"validations (every {period.value} {unit}): trials will be judged at {_and(judged)} {unit} instead; "
            f"{fix}"]


def budget(config: Mapping[str, Any]) -> float:
    """The searcher's budget: the units of its time metric that the whole search trains, each trial counted from
    where it starts, in the run `preview` shows (a random metric seeded by the experiment seed; adaptive searchers'
    real runs stop and promote other trials, so for them it is an estimate)."""
    from stalwart.searcher.factory import make_search_method

    base = views.experiment_seed(config) or 0

    def metric_fn(hparams: dict[str, Any], step: float) -> float:
        return random.Random(f"{base}:{json.dumps(hparams, sort_keys=True, default=str)}").random()

    search = make_search_method(config)
    mct = getattr(search.settings or searcher_settings(config), "max_concurrent_trials", None)
    workers = mct if isinstance(mct, int) and mct > 0 else 16
    return simulate(config, metric_fn, max_workers=workers, search=search,
                    validation_period=validation_every(config, search.settings)).units_trained()
