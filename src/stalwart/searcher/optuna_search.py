"""`optuna`: model-based search with an Optuna sampler (TPE by default). Optuna is optional.

Fields: `metric`, `smaller_is_better`, `sampler` (`tpe` default, `random`, `cmaes`; `cmaes` also
needs the `cmaes` package), `max_trials`, `max_concurrent_trials` (default 16, 0 = unlimited),
and lengths as `single` (`max_time` + `time_metric`, or the legacy `max_length`; `Create.length`
is that value).

* Trials run as in `random` (concurrency, INVALID_HP replaced and not counted), but each new
  trial's hyperparameters come from `study.ask()` on an in-memory study.
* The value told for a trial is its last reported validation metric. A trial that exits
  COMPLETED / USER_REQUESTED_STOP with a metric is told COMPLETE; one without a metric, ERRORED
  or CANCELED is told FAIL; INVALID_HP is told FAIL and replaced.
* Space: `int` -> IntDistribution, `double` -> FloatDistribution, `log` -> FloatDistribution over
  `base^minval .. base^maxval` with `log=True` (log-uniform is the same in every base),
  `categorical` -> CategoricalDistribution over the value indices (values may be any YAML);
  `const` leaves are filled in, not searched. Parameters are named by their dotted paths.

The study, its determinism and its snapshot are `stalwart.searcher.model_sampler.OptunaModel`'s.
Optuna is imported only when this searcher is built; without it, building raises ConfigError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.searcher._common import MetricReader, SearchContext
from stalwart.searcher.base import Action, TrialExit
from stalwart.searcher.model_sampler import SAMPLERS, OptunaModel, import_optuna
from stalwart.searcher.random_search import PoolSearch
from stalwart.searcher.space import HParamSpace

__all__ = ["SAMPLERS", "OptunaSearch", "import_optuna"]


class OptunaSearch(PoolSearch):
    def __init__(self, space: HParamSpace, experiment_seed: int | None, reader: MetricReader, *,
                 max_trials: int, max_concurrent: int, length: int | None, sampler: str = "tpe") -> None:
        super().__init__(SearchContext(experiment_seed), max_trials, max_concurrent, length)
        self.space = space
        self.reader = reader
        # values are told as reported (not sign-flipped), so the study's direction follows the metric
        self.model = OptunaModel(space, self.ctx.rng, sampler, minimize=reader.sign > 0)

    def next_hparams(self) -> dict[str, Any]:
        # PoolSearch._create gives the new trial the next request id right after this call
        return self.model.ask(str(self.ctx.next_id))

    # -- events -------------------------------------------------------------------------------

    def on_validation_completed(self, request_id: str, metrics: dict[str, Any], steps_completed: int) -> list[Action]:
        if request_id not in self.live:
            return []
        value = self.reader.value(metrics)
        if value is not None:
            self.model.report(request_id, steps_completed, value * self.reader.sign)
        return []

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        record = self.model.record(request_id)
        if record is not None and request_id in self.live:
            if how in (TrialExit.COMPLETED, TrialExit.USER_REQUESTED_STOP) and record["last"] is not None:
                self.model.finish(request_id, "COMPLETE", record["last"])
            else:
                self.model.finish(request_id, "FAIL")
        return super().on_trial_exited(request_id, how)

    # -- state --------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), "records": self.model.state()}

    def _load(self, state: Mapping[str, Any]) -> None:
        super()._load(state)
        self.model.load(state["records"])
