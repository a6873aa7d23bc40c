"""The `single` searcher: exactly one trial, its hyperparameters sampled once.

Determined runs it as `random` with `max_trials=1, max_concurrent_trials=1`
(master/pkg/searcher/random.go, `newSingleSearch`): const hyperparameters keep their value and
`int`, `double`, `log` and `categorical` ones are sampled once, as `random` samples them, from the
experiment's seeded generator (first the hyperparameters, then the trial seed), so the same
`reproducibility.experiment_seed` gives the same trial. One difference from `random`: an INVALID_HP
exit ends the search as a failure instead of being replaced by a new sample (Determined replaces
one only for the `random` searcher). Request id "1"; `Create.length` is max_time (in time_metric
units) or the legacy max_length value.
"""

from __future__ import annotations

from typing import Any

from stalwart.searcher.base import Action, TrialExit
from stalwart.searcher.random_search import RandomSearch
from stalwart.searcher.space import HParamSpace


class SingleSearch(RandomSearch):
    replace_invalid = False
    failure_reason = "the trial failed"

    def __init__(self, hparams: dict[str, Any] | HParamSpace, experiment_seed: int | None, length: int | None) -> None:
        space = hparams if isinstance(hparams, HParamSpace) else HParamSpace(hparams)
        super().__init__(space, experiment_seed, 1, 1, length)

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        if how is TrialExit.INVALID_HP and request_id in self.live:
            how = TrialExit.ERRORED
        return super().on_trial_exited(request_id, how)
