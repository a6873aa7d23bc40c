"""Determined 0.38-style training script: `pytorch.init()` + `Trainer.fit()`, digits data, runs anywhere.

On a cluster (`entrypoint: python3 train.py`) hyperparameters and resume state come from the
trial; off-cluster (`python3 train.py`) from the defaults below.
"""

import logging

import determined as det
import numpy as np
import torch
from determined import pytorch
from sklearn.datasets import load_digits
from torch import nn

LOCAL_HPARAMS = {"learning_rate": 0.1, "hidden": 48, "global_batch_size": 32, "gamma": 0.7}


def split(train: bool) -> torch.utils.data.TensorDataset:
    digits = load_digits()
    order = np.random.default_rng(1).permutation(len(digits.target))
    cut = int(0.8 * len(order))
    idx = order[:cut] if train else order[cut:]
    return torch.utils.data.TensorDataset(torch.tensor(digits.data[idx] / 16.0, dtype=torch.float32),
                                          torch.tensor(digits.target[idx]))


class StepCounter(pytorch.PyTorchCallback):
    """Counts validations; its state travels in checkpoints."""

    def __init__(self) -> None:
        self.validations = 0

    def on_validation_end(self, metrics) -> None:
        self.validations += 1

    def state_dict(self):
        return {"validations": self.validations}

    def load_state_dict(self, state) -> None:
        self.validations = state["validations"]


class DigitsTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        width = context.get_hparam("hidden")
        self.model = context.wrap_model(nn.Sequential(nn.Linear(64, width), nn.Tanh(), nn.Linear(width, 10)))
        self.opt = context.wrap_optimizer(torch.optim.Adadelta(self.model.parameters(),
                                                               lr=context.get_hparam("learning_rate") * 10))
        self.sched = context.wrap_lr_scheduler(
            torch.optim.lr_scheduler.StepLR(self.opt, step_size=1, gamma=context.get_hparam("gamma")),
            step_mode=pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH)

    def build_training_data_loader(self):
        return pytorch.DataLoader(split(True), batch_size=self.context.get_per_slot_batch_size(), shuffle=True)

    def build_validation_data_loader(self):
        return pytorch.DataLoader(split(False), batch_size=self.context.get_per_slot_batch_size())

    def build_callbacks(self):
        return {"counter": StepCounter()}

    def train_batch(self, batch, epoch_idx, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss, "lr": self.sched.get_last_lr()[0]}

    def evaluate_batch(self, batch):
        x, y = batch
        logits = self.model(x)
        return {"validation_loss": nn.functional.cross_entropy(logits, y),
                "accuracy": (logits.argmax(1) == y).float().mean()}


def main() -> None:
    info = det.get_cluster_info()
    hparams = None if info is not None else LOCAL_HPARAMS
    with pytorch.init(hparams=hparams) as train_context:
        trainer = pytorch.Trainer(DigitsTrial(train_context), train_context)
        trainer.fit(max_length=pytorch.Epoch(2), validation_period=pytorch.Batch(30),
                    checkpoint_period=pytorch.Batch(30), reporting_period=pytorch.Batch(10))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    main()
