"""The `single` searcher: exactly one trial with the configured (all-const) hyperparameters."""

from __future__ import annotations

import random

from stalwart.searcher.base import Action, Create, SearchMethod, Shutdown, TrialExit


class SingleSearch(SearchMethod):
    def __init__(self, hparams: dict, experiment_seed: int, length: int | None) -> None:
        self._hparams = hparams
        self._length = length
        self._seed = random.Random(experiment_seed).randint(0, 2**31 - 1)
        self._created = False
        self._done = False

    def initial_operations(self) -> list[Action]:
        if self._created:
            return []
        self._created = True
        return [Create("1", self._hparams, self._seed, self._length)]

    def on_validation_completed(self, request_id: str, metrics: dict, steps_completed: int) -> list[Action]:
        return []

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        self._done = True
        failed = how is TrialExit.ERRORED
        return [Shutdown(failure=failed, reason="the trial failed" if failed else "")]

    def progress(self, trial_progress: dict[str, float]) -> float:
        if self._done:
            return 1.0
        return max(0.0, min(1.0, trial_progress.get("1", 0.0)))

    def snapshot(self) -> dict:
        return {"created": self._created, "done": self._done}

    def restore(self, snapshot: dict) -> None:
        self._created = bool(snapshot.get("created"))
        self._done = bool(snapshot.get("done"))
