"""Evolutionary suggestions for the early-stopping searchers: new trials as mutations of the best ones so far.

Selected by `searcher.sampler: evolution` on `adaptive_asha`, `async_halving` and `asha_promotion` (Stalwart's,
not Determined's). `EvolutionModel` has the same interface as `model_sampler.OptunaModel`; the searcher
tells it every rung result (`report`) and asks it for each new trial's hyperparameters (`ask`).

The rule for `ask`:
1. Until some rung length has results from `MIN_RESULTS` trials, or with probability
   `1 - EXPLOIT_PROBABILITY`, the hyperparameters are a random draw from the space, as with `sampler: random`.
2. Otherwise a parent is picked uniformly from the elite. Trials are compared at one length, the
   comparison rung: the longest rung length with results from at least `MIN_RESULTS` trials. The elite
   is the best `TOP_FRACTION` (at least 2) of the trials with a result there, by that result. So a trial
   that reached a long rung early, against little competition, does not outrank better trials that are
   only compared with it once enough of them get there; and a parent is chosen by a result measured at
   the same length as its rivals'.
3. The child is the parent's hyperparameters, each mutated on its own. With probability
   `RESAMPLE_PROBABILITY` it is redrawn at random. Otherwise a number takes a Gaussian step with a
   standard deviation of `MUTATION_SCALE` times its range, measured in the space it is sampled in (the
   exponent for `log`, so a learning rate moves by a fraction of its decades), clipped to the range
   (an `int` is rounded); a categorical value is kept.

This is regularised evolution run on ASHA's rung results, in the spirit of DEHB (Awad et al. 2021) and
BOHB's choice of the largest budget with enough results. B3 in bench/RESULTS.md measures it on the
LCBench surrogate; the rule above (session 15) replaced a first one that ranked trials by the highest
rung reached and mutated by PBT's explore step (a number scaled by 1 +- 0.2), which stalled in more
of the tasks.

Determinism: every draw comes from the searcher's generator. `state()` holds each trial's
hyperparameters and its rung results as JSON, and `load()` restores them (also from the snapshots of the
first rule, which kept only a trial's highest rung result), so a restored searcher makes the same next
suggestion.
"""

from __future__ import annotations

import copy
import heapq
import math
import random
from collections.abc import Mapping
from typing import Any

from stalwart.searcher.space import HParamSpace, Leaf

MIN_RESULTS = 10
EXPLOIT_PROBABILITY = 0.8
TOP_FRACTION = 0.1
RESAMPLE_PROBABILITY = 0.2
MUTATION_SCALE = 0.2


class EvolutionModel:
    """Parents from ASHA's rung results, children by mutation; see the module docstring."""

    def __init__(self, space: HParamSpace, rng: random.Random) -> None:
        self.space = space
        self.rng = rng
        self.records: dict[str, dict[str, Any]] = {}  # rid -> {"hparams": ..., "rungs": [[length, value], ...]}
        self.at_length: dict[float, dict[str, float]] = {}  # rung length -> {rid: value there}
        self.age: dict[str, int] = {}  # rid -> the order it was asked in (ties in the elite: the older first)

    def ask(self, rid: str) -> dict[str, Any]:
        """Hyperparameters for the new trial `rid`."""
        length = self.comparison_length()
        if length is not None and self.rng.random() < EXPLOIT_PROBABILITY:
            elite = self._elite_at(length)
            parent = self.records[elite[self.rng.randrange(len(elite))]]
            hparams = self.mutate(parent["hparams"])
        else:
            hparams = self.space.sample(self.rng)
        self.records[rid] = {"hparams": hparams, "rungs": []}
        self.age[rid] = len(self.age)
        return hparams

    def comparison_length(self) -> float | None:
        """The longest rung length with results from `MIN_RESULTS` trials; None while there is none."""
        return max((length for length, results in self.at_length.items() if len(results) >= MIN_RESULTS),
                   default=None)

    def elite(self) -> list[str]:
        """The trials parents are picked from, best first: the top `TOP_FRACTION` (at least 2) of those with a
        result at the comparison rung, by that result (ties: the older trial first); empty while there is no
        comparison rung."""
        length = self.comparison_length()
        return [] if length is None else self._elite_at(length)

    def _elite_at(self, length: float) -> list[str]:
        results = self.at_length[length]
        # nsmallest is sorted(...)[:n] without sorting every trial on each ask
        return heapq.nsmallest(max(2, math.ceil(TOP_FRACTION * len(results))), results,
                               key=lambda rid: (results[rid], self.age[rid]))

    def mutate(self, hparams: Mapping[str, Any]) -> dict[str, Any]:
        """A child of `hparams`: rule 3 of the module docstring."""
        return self.space.mutate(hparams, self.rng, RESAMPLE_PROBABILITY, self._step)

    def _step(self, leaf: Leaf, value: float) -> float | int:
        low, high = float(leaf.spec["minval"]), float(leaf.spec["maxval"])
        x = math.log(value, leaf.base) if leaf.kind == "log" else float(value)
        x = min(max(x + self.rng.gauss(0.0, MUTATION_SCALE * (high - low)), low), high)
        if leaf.kind == "log":
            return float(min(max(leaf.base ** x, leaf.low()), leaf.high()))
        if leaf.kind == "int":
            return int(round(x))
        return x

    def report(self, rid: str, step: float, value: float) -> None:
        """`rid` reached `value` (smaller is better) at rung length `step`."""
        record = self.records.get(rid)
        if record is None:
            return
        record["rungs"] = [r for r in record["rungs"] if r[0] != step] + [[step, value]]
        self.at_length.setdefault(step, {})[rid] = value

    def finish(self, rid: str, state: str, value: float | None = None) -> None:
        """Nothing to do: a trial's rank rests on the rung results already reported."""

    def close(self, rid: str, *, invalid: bool = False) -> None:
        """A trial with invalid hyperparameters never becomes a parent: its results are dropped."""
        if invalid and rid in self.records:
            for step, _ in self.records[rid]["rungs"]:
                self.at_length[step].pop(rid, None)
            self.records[rid]["rungs"] = []

    def state(self) -> list[dict[str, Any]]:
        return [{"rid": rid, **copy.deepcopy(record)} for rid, record in self.records.items()]

    def load(self, records: list[Mapping[str, Any]]) -> None:
        self.records, self.at_length = {}, {}
        self.age = {r["rid"]: i for i, r in enumerate(records)}
        for r in records:
            if "rungs" in r:
                rungs = [list(pair) for pair in r["rungs"]]
            else:  # a snapshot of the first rule: only the highest rung result
                rungs = [] if r.get("step") is None else [[r["step"], r["value"]]]
            self.records[r["rid"]] = {"hparams": copy.deepcopy(r["hparams"]), "rungs": rungs}
            for step, value in rungs:
                self.at_length.setdefault(step, {})[r["rid"]] = value
