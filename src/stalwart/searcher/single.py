"""The `single` searcher: exactly one trial with the configured (all-const) hyperparameters.

Determined runs it as `random` with `max_trials=1, max_concurrent_trials=1`. One difference: an
INVALID_HP exit ends the search as a failure instead of retrying (the hyperparameters are all
const, so a retry would be rejected the same way forever). Request id "1"; its seed is the first
draw of the experiment's generator; `Create.length` is max_time (in time_metric units) or the
legacy max_length value.
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
