"""One validation pass of the Trainer: evaluate_batch() over this rank's shard, or evaluate_full_dataset()."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection
from typing import Any, cast

import torch

from stalwart.harness.pytorch._callback import PyTorchCallback
from stalwart.harness.pytorch._context import PyTorchTrialContext
from stalwart.harness.pytorch._reducer import Metrics, columns, plain, reduce_columns
from stalwart.harness.pytorch._trial import PyTorchTrial


def overrides(trial: PyTorchTrial, name: str) -> bool:
    """Whether the trial's class defines its own method `name` (not PyTorchTrial's)."""
    return getattr(type(trial), name) is not getattr(PyTorchTrial, name)


class Evaluator:
    """Runs the trial's evaluation on the validation data and returns its metrics, reduced across ranks."""

    def __init__(self, trial: PyTorchTrial, context: PyTorchTrialContext, test_mode: bool) -> None:
        self.trial, self.context, self.test_mode = trial, context, test_mode
        self.dist = context.distributed
        self.per_batch = overrides(trial, "evaluate_batch")
        if self.per_batch == overrides(trial, "evaluate_full_dataset"):
            raise ValueError("define exactly one of evaluate_batch() and evaluate_full_dataset()")
        self._takes_idx = "batch_idx" in inspect.signature(trial.evaluate_batch).parameters
        self.loader: torch.utils.data.DataLoader[Any] | None = None  # set once the Trainer built the loaders

    def evaluate(self, callbacks: Collection[PyTorchCallback]) -> Metrics:
        """The metrics of one pass (evaluate_full_dataset()'s on the chief only: the others get {})."""
        return self._evaluate_batches(callbacks) if self.per_batch else self._evaluate_full()

    def _loader(self) -> torch.utils.data.DataLoader[Any]:
        # None on the ranks that never evaluate, or where the trial's build_validation_data_loader() returned
        # None itself: that None is passed on as it is (the cast changes nothing at run time).
        return cast("torch.utils.data.DataLoader[Any]", self.loader)

    def _evaluate_batches(self, callbacks: Collection[PyTorchCallback]) -> Metrics:
        for cb in callbacks:
            cb.on_validation_epoch_start()
        to_device: Callable[[Any], Any] = (self.context.to_device if self.context.experimental._auto_to_device
                                           else (lambda b: b))
        # A trial's evaluate_batch() may leave out the base class's batch_idx parameter (_takes_idx says).
        evaluate_batch: Callable[..., Any] = self.trial.evaluate_batch
        outputs = []
        for idx, batch in enumerate(self._loader()):
            batch = to_device(batch)
            out = (evaluate_batch(batch=batch, batch_idx=idx) if self._takes_idx
                   else evaluate_batch(batch=batch))
            if not isinstance(out, dict):
                raise TypeError(f"evaluate_batch() must return a dict of metrics, got {type(out).__name__}")
            outputs.append(out)
            if self.test_mode:
                break
        if not outputs and self.dist.size == 1:
            raise RuntimeError("the validation data loader yields no batches")
        for cb in callbacks:
            cb.on_validation_epoch_end(outputs)
        return reduce_columns(columns(outputs), self.trial.evaluation_reducer(), self.dist.allgather, self.dist.size)

    def _evaluate_full(self) -> Metrics:
        if self.dist.rank != 0:
            return {}
        out = self.trial.evaluate_full_dataset(data_loader=self._loader())
        if not isinstance(out, dict):
            raise TypeError(f"evaluate_full_dataset() must return a dict of metrics, got {type(out).__name__}")
        return {k: plain(v) for k, v in out.items()}
