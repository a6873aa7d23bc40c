"""Evolutionary suggestions for the early-stopping searchers: new trials as mutations of the best ones so far.

Selected by `searcher.sampler: evolution` on `adaptive_asha`, `async_halving` and `asha_promotion` (Stalwart's,
not Determined's). `EvolutionModel` has the same interface as `model_sampler.OptunaModel`; the searcher
tells it every rung result (`report`) and asks it for each new trial's hyperparameters (`ask`).

The rule for `ask`:
1. Until `MIN_RESULTS` trials have a rung result, or with probability `1 - EXPLOIT_PROBABILITY`, the
   hyperparameters are a random draw from the space, as with `sampler: random`.
2. Otherwise a parent is picked uniformly from the elite. The elite is the best `TOP_FRACTION` of the
   trials with a result (at least 2), ranked by the highest rung a trial reached and then by its value
   there. So a trial at the last rung outranks every trial stopped below it.
3. The child is the parent's hyperparameters mutated by PBT's explore step (`HParamSpace.explore`). Each
   hyperparameter is redrawn at random with probability `RESAMPLE_PROBABILITY`; otherwise a number is
   multiplied by 1 +- `PERTURB_FACTOR` (clipped to its range) and a categorical value is kept.

This is regularised evolution run on ASHA's rung results, in the spirit of DEHB (Awad et al. 2021). On
the LCBench surrogate (bench/search.py, B3) it found much better configurations than random draws
within the same budget.

Determinism: every draw comes from the searcher's generator. `state()` holds each trial's
hyperparameters and its best rung result as JSON, and `load()` restores them, so a restored searcher
makes the same next suggestion.
"""

from __future__ import annotations

import copy
import heapq
import math
import random
from collections.abc import Mapping

from stalwart.searcher.space import HParamSpace

MIN_RESULTS = 10
EXPLOIT_PROBABILITY = 0.8
TOP_FRACTION = 0.1
RESAMPLE_PROBABILITY = 0.2
PERTURB_FACTOR = 0.2


class EvolutionModel:
    """Parents from ASHA's rung results, children by mutation; see the module docstring."""

    def __init__(self, space: HParamSpace, rng: random.Random) -> None:
        self.space = space
        self.rng = rng
        self.records: dict[str, dict] = {}  # rid -> {"hparams", "step", "value"} (step/value: best rung so far)

    def ask(self, rid: str) -> dict:
        """Hyperparameters for the new trial `rid`."""
        scored = self._scored()
        if len(scored) >= MIN_RESULTS and self.rng.random() < EXPLOIT_PROBABILITY:
            elite = self._best(scored)
            parent = self.records[elite[self.rng.randrange(len(elite))]]
            hparams = self.space.explore(parent["hparams"], self.rng, RESAMPLE_PROBABILITY, PERTURB_FACTOR)
        else:
            hparams = self.space.sample(self.rng)
        self.records[rid] = {"hparams": hparams, "step": None, "value": None}
        return hparams

    def elite(self) -> list[str]:
        """The trials parents are picked from, best first: the top `TOP_FRACTION` (at least 2) of those with a
        result, by highest rung reached, then value there (ties: the older trial first)."""
        return self._best(self._scored())

    def _scored(self) -> list[str]:
        return [rid for rid, r in self.records.items() if r["step"] is not None]

    def _best(self, scored: list[str]) -> list[str]:
        # nsmallest is sorted(...)[:n], ties in input order included, without sorting every trial on each ask
        return heapq.nsmallest(max(2, math.ceil(TOP_FRACTION * len(scored))), scored,
                               key=lambda rid: (-self.records[rid]["step"], self.records[rid]["value"]))

    def report(self, rid: str, step: float, value: float) -> None:
        """`rid` reached `value` (smaller is better) at rung length `step`; the highest rung counts."""
        record = self.records.get(rid)
        if record is not None and (record["step"] is None or step > record["step"]):
            record["step"], record["value"] = step, value

    def finish(self, rid: str, state: str, value: float | None = None) -> None:
        """Nothing to do: a trial's rank rests on the rung results already reported."""

    def close(self, rid: str, *, invalid: bool = False) -> None:
        """A trial with invalid hyperparameters never becomes a parent."""
        if invalid and rid in self.records:
            self.records[rid].update(step=None, value=None)

    def state(self) -> list[dict]:
        return [{"rid": rid, **copy.deepcopy(record)} for rid, record in self.records.items()]

    def load(self, records: list[Mapping]) -> None:
        self.records = {r["rid"]: {"hparams": copy.deepcopy(r["hparams"]), "step": r["step"], "value": r["value"]}
                        for r in records}
