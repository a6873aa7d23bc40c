"""A Determined PyTorchTrial on scikit-learn's digits for data-parallel training (entrypoint: model_def:DigitsTrial).

Nothing in it is distributed-specific: with `resources.slots_per_trial: N` the launcher starts N
workers, `context.wrap_model` wraps the model in DistributedDataParallel, and the DataLoader gives
each worker global_batch_size / N records per batch.
"""

import time

import numpy as np
import torch
from determined import pytorch
from sklearn.datasets import load_digits
from torch import nn


def digits_split(train: bool) -> torch.utils.data.TensorDataset:
    """A fixed 80/20 split of the 1,797 8x8 digit images, scaled to 0..1."""
    digits = load_digits()
    order = np.random.default_rng(0).permutation(len(digits.target))
    cut = int(0.8 * len(order))
    idx = order[:cut] if train else order[cut:]
    x = torch.tensor(digits.data[idx] / 16.0, dtype=torch.float32)
    return torch.utils.data.TensorDataset(x, torch.tensor(digits.target[idx]))


def make_model(hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


class DigitsTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        torch.set_num_threads(1)
        self.model = context.wrap_model(make_model(context.get_hparam("hidden")))
        self.optimizer = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("learning_rate"), momentum=0.9))
        self.loss = nn.CrossEntropyLoss()

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(digits_split(True), batch_size=self.context.get_per_slot_batch_size(),
                                  shuffle=True)

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(digits_split(False), batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch, epoch_idx: int, batch_idx: int):
        x, y = batch
        loss = self.loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        time.sleep(self.context.get_hparams().get("batch_sleep", 0.0))  # > 0 slows it down (tests pause it)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        x, y = batch
        logits = self.model(x)
        return {"validation_loss": self.loss(logits, y), "accuracy": (logits.argmax(1) == y).float().mean()}
