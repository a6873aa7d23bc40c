"""checkpoint_policy after a validation: checkpoint always ('all'), never ('none') or on a new best ('best')."""

from __future__ import annotations

import logging

from stalwart.harness.core import TrainContext
from stalwart.harness.pytorch._checkpoint import TrialState
from stalwart.harness.pytorch._reducer import Metrics

log = logging.getLogger("stalwart.pytorch")


class CheckpointPolicy:
    """Reads the searcher metric from a validation's metrics and says whether to checkpoint after it."""

    def __init__(self, policy: str, searcher_metric: str | None, smaller_is_better: bool, on_cluster: bool,
                 train: TrainContext) -> None:
        if policy == "best" and not searcher_metric:
            log.warning("checkpoint_policy='best' needs searcher.metric in the experiment config: using 'all'")
            policy = "all"
        self.name = policy
        self.searcher_metric, self.smaller_is_better, self.on_cluster = searcher_metric, smaller_is_better, on_cluster
        self._train = train

    def searcher_value(self, metrics: Metrics) -> float | None:
        """The searcher metric's value (None without one); an error if it is missing where it is needed."""
        name = self.searcher_metric
        if not name:
            return None
        if name not in metrics:
            if self.on_cluster or self.name == "best":
                raise RuntimeError(f"the searcher metric {name!r} is not among the validation metrics "
                                   f"{sorted(metrics)}")
            return None
        value = metrics[name]
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise RuntimeError(f"the searcher metric {name!r} must be a number, got {value!r}")
        return float(value)

    def best_before(self, state: TrialState) -> float | None:
        """The best validation so far (the experiment's on a cluster, this trial's off it), for 'best'."""
        if self.name != "best":
            return None
        if self.on_cluster:
            return self._train.get_experiment_best_validation()
        return state.best_validation

    def says_checkpoint(self, value: float | None, before: float | None, state: TrialState) -> bool:
        """Whether to checkpoint after a validation of searcher value `value`; records a new best in `state`."""
        if self.name == "all":
            return True
        if self.name != "best" or value is None:
            return False
        better = before is None or (value < before if self.smaller_is_better else value > before)
        if better:
            state.best_validation = value
        return better
