"""PyTorchTrial and Trainer with Determined's API: `stalwart.pytorch` (init, Trainer, DataLoader, units...)."""

from stalwart.harness.pytorch._callback import PyTorchCallback
from stalwart.harness.pytorch._checkpoint import load_trial_from_checkpoint_path
from stalwart.harness.pytorch._context import PyTorchTrialContext
from stalwart.harness.pytorch._data import DataLoader, TorchData, data_length, to_device
from stalwart.harness.pytorch._lr_scheduler import LRScheduler
from stalwart.harness.pytorch._reducer import MetricReducer, Reducer
from stalwart.harness.pytorch._trainer import Trainer, init
from stalwart.harness.pytorch._trial import PyTorchTrial
from stalwart.harness.pytorch._units import Batch, Epoch, TrainUnit

__all__ = [
    "Batch",
    "DataLoader",
    "Epoch",
    "LRScheduler",
    "MetricReducer",
    "PyTorchCallback",
    "PyTorchTrial",
    "PyTorchTrialContext",
    "Reducer",
    "TorchData",
    "TrainUnit",
    "Trainer",
    "data_length",
    "init",
    "load_trial_from_checkpoint_path",
    "to_device",
]
