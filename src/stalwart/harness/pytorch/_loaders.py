"""The Trainer's data for one rank: the training batches (repeated, resumed) and the validation loader."""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from stalwart.harness.pytorch._context import PyTorchTrialContext
from stalwart.harness.pytorch._data import DataLoader
from stalwart.harness.pytorch._trial import PyTorchTrial

log = logging.getLogger("stalwart.pytorch")


@dataclasses.dataclass
class Loaders:
    """The training batches from where the trial stands, and the validation data (None: not on this rank)."""

    train: Iterable[Any]
    validation: torch.utils.data.DataLoader[Any] | None


def repeat_plain(loader: Iterable[Any], skip: int) -> Iterator[Any]:
    """A user's torch DataLoader, repeated epoch after epoch, its first `skip` batches dropped."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            if skip:
                skip -= 1
                continue
            yield batch
        if empty:
            raise ValueError("the training data loader yields no batches")


def build_loaders(trial: PyTorchTrial, context: PyTorchTrialContext, *, batches_trained: int, seed: int | None,
                  evaluate_batch_defined: bool) -> Loaders:
    """Build the trial's loaders for this rank and set `context._epoch_len` (agreed on by all ranks)."""
    dist = context.distributed
    size, rank = dist.size, dist.rank
    train = trial.build_training_data_loader()
    train_batches: Iterable[Any]
    if isinstance(train, DataLoader):
        train_batches = train.get_data_loader(repeat=True, skip=batches_trained, num_replicas=size, rank=rank,
                                              seed=seed)
        epoch_len = len(train_batches)
    else:
        _warn_plain_loader(context, "build_training_data_loader", train)
        try:
            epoch_len = len(train)
        except TypeError:
            epoch_len = sys.maxsize
        train_batches = repeat_plain(train, batches_trained)
    context._epoch_len = dist.broadcast(epoch_len)
    if context._epoch_len < 1:
        raise ValueError("the training data loader yields no batches")
    val = trial.build_validation_data_loader()
    validation: torch.utils.data.DataLoader[Any] | None = None
    if not isinstance(val, DataLoader):
        _warn_plain_loader(context, "build_validation_data_loader", val)
        validation = val
    elif evaluate_batch_defined:
        validation = val.get_data_loader(num_replicas=size, rank=rank, seed=seed)
    elif dist.rank == 0:
        validation = val.get_data_loader(seed=seed)
    return Loaders(train_batches, validation)


def _warn_plain_loader(context: PyTorchTrialContext, where: str, loader: torch.utils.data.DataLoader[Any]) -> None:
    if not context.experimental._data_repro_checks_disabled:
        log.warning("%s() returned a %s, not a stalwart.pytorch.DataLoader: it is not sharded by rank, and a "
                    "resumed trial sees the same data order only if the loader's order is fixed",
                    where, type(loader).__name__)
