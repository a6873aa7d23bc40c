"""PyTorchTrial: the class users subclass (build loaders, train_batch, evaluate_batch or evaluate_full_dataset)."""

from __future__ import annotations

import abc
from typing import Any

import torch

from stalwart.harness.pytorch._callback import PyTorchCallback
from stalwart.harness.pytorch._context import PyTorchTrialContext
from stalwart.harness.pytorch._data import DataLoader, data_length
from stalwart.harness.pytorch._reducer import Reducer


class PyTorchTrial(abc.ABC):
    """A trial: wrap models/optimizers in `__init__`, then the Trainer calls the methods below.

    A `batch` is whatever the trial's data loader yields: it is typed Any so that a subclass may
    annotate its own batch type (a narrower parameter type than the base's would break overriding).
    """

    @abc.abstractmethod
    def __init__(self, context: PyTorchTrialContext) -> None:
        """Build and wrap models (`context.wrap_model`), optimizers and LR schedulers."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> DataLoader | torch.utils.data.DataLoader[Any]:
        """The training data, as a stalwart.pytorch.DataLoader (sharded, repeated and resumed for you)."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> DataLoader | torch.utils.data.DataLoader[Any]:
        """The validation data."""

    @abc.abstractmethod
    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> torch.Tensor | dict[str, Any]:
        """Forward, `context.backward(loss)`, `context.step_optimizer(opt)`; return the loss or a metrics dict."""

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        """Metrics of one validation batch; the Trainer reduces them with `evaluation_reducer()`."""
        raise NotImplementedError("define evaluate_batch() or evaluate_full_dataset()")

    def evaluate_full_dataset(self, data_loader: torch.utils.data.DataLoader[Any]) -> dict[str, Any]:
        """Metrics of the whole validation set (runs on the chief only); replaces evaluate_batch()."""
        raise NotImplementedError("define evaluate_batch() or evaluate_full_dataset()")

    def evaluation_reducer(self) -> Reducer | dict[str, Reducer]:
        """How evaluate_batch() metrics are reduced: one Reducer for all, or one per metric name."""
        return Reducer.AVG

    def build_callbacks(self) -> dict[str, PyTorchCallback]:
        """Callbacks by name (the name keys their state in checkpoints)."""
        return {}

    def get_batch_length(self, batch: Any) -> int:
        """The number of records in `batch`."""
        return data_length(batch)
