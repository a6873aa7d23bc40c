"""Test trials for stalwart.pytorch: an MLP on scikit-learn's digits (no downloads), and helpers."""

from __future__ import annotations

import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

from stalwart import pytorch

_DIGITS: tuple | None = None


def digits() -> tuple[torch.utils.data.TensorDataset, torch.utils.data.TensorDataset]:
    """(train, validation) TensorDatasets: 1437 and 360 8x8 digit images as 64 floats in [0, 1]."""
    global _DIGITS
    if _DIGITS is None:
        x, y = load_digits(return_X_y=True)
        order = np.random.default_rng(0).permutation(len(x))
        x = torch.tensor(x[order] / 16.0, dtype=torch.float32)
        y = torch.tensor(y[order], dtype=torch.long)
        _DIGITS = (torch.utils.data.TensorDataset(x[:1437], y[:1437]),
                   torch.utils.data.TensorDataset(x[1437:], y[1437:]))
    return _DIGITS


HPARAMS = {"global_batch_size": 32, "lr": 0.1, "hidden": 32, "dropout": 0.1}
STEP_MODES = {
    "epoch": pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH,
    "batch": pytorch.LRScheduler.StepMode.STEP_EVERY_BATCH,
    "optimizer": pytorch.LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP,
    "manual": pytorch.LRScheduler.StepMode.MANUAL_STEP,
}


class DigitsTrial(pytorch.PyTorchTrial):
    """An MLP with dropout (so training draws from the torch RNG) and a shuffled training loader."""

    def __init__(self, context: pytorch.PyTorchTrialContext, callbacks: dict | None = None) -> None:
        self.context = context
        hidden = context.get_hparam("hidden")
        self.model = context.wrap_model(nn.Sequential(
            nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(context.get_hparam("dropout")), nn.Linear(hidden, 10)))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("lr"),
                                                          momentum=0.9))
        mode = context.get_hparams().get("lr_mode")
        self.sched = None
        if mode:
            self.sched = context.wrap_lr_scheduler(torch.optim.lr_scheduler.StepLR(self.opt, step_size=1, gamma=0.9),
                                                   STEP_MODES[mode], frequency=context.get_hparams().get("lr_freq", 1))
        self.clip = context.get_hparams().get("clip")
        self.stop_at = context.get_hparams().get("stop_at")
        self.loss_fn = nn.CrossEntropyLoss()
        self.losses: list[float] = []
        self.lrs: list[float] = []
        self.seen: list[list[int]] = []
        self._callbacks = callbacks or {}

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(digits()[0], batch_size=self.context.get_per_slot_batch_size(), shuffle=True)

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(digits()[1], batch_size=64)

    def build_callbacks(self) -> dict:
        return self._callbacks

    def train_batch(self, batch, epoch_idx: int, batch_idx: int):
        x, y = batch
        out = self.model(x)
        loss = self.loss_fn(out, y)
        self.context.backward(loss)
        clip = None
        if self.clip:
            clip = lambda params: torch.nn.utils.clip_grad_norm_(params, self.clip)  # noqa: E731
        self.lrs.append(self.opt.param_groups[0]["lr"])
        self.context.step_optimizer(self.opt, clip_grads=clip)
        self.losses.append(loss.item())
        self.seen.append(y[:4].tolist())
        if self.context.get_hparams().get("batch_sleep"):
            time.sleep(self.context.get_hparam("batch_sleep"))
        if self.stop_at is not None and batch_idx + 1 >= self.stop_at:
            self.context.set_stop_requested(True)
        return {"loss": loss, "batch_acc": (out.detach().argmax(1) == y).float().mean()}

    def evaluate_batch(self, batch, batch_idx: int):
        x, y = batch
        if self.context.get_hparams().get("eval_noise"):
            x = x + 0.01 * torch.rand_like(x)  # draws from the global torch RNG
        out = self.model(x)
        return {"validation_loss": self.loss_fn(out, y), "accuracy": (out.argmax(1) == y).float().mean(),
                "correct": (out.argmax(1) == y).sum(), "n": torch.tensor(len(y))}

    def evaluation_reducer(self):
        r = pytorch.Reducer
        return {"validation_loss": r.AVG, "accuracy": r.AVG, "correct": r.SUM, "n": r.SUM}


def params_of(trial: DigitsTrial) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trial.model.parameters()]


class Recorder(pytorch.PyTorchCallback):
    """Records every hook call, and keeps a counter in its checkpointed state."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.count = 0
        self.loaded: dict | None = None

    def _rec(self, *event) -> None:
        self.calls.append(event)

    def on_trial_startup(self, first_batch_idx, checkpoint_uuid):
        self._rec("trial_startup", first_batch_idx, checkpoint_uuid)

    def on_trial_shutdown(self):
        self._rec("trial_shutdown")

    def on_training_start(self):
        self._rec("training_start")

    def on_training_epoch_start(self, epoch_idx):
        self._rec("epoch_start", epoch_idx)

    def on_training_epoch_end(self, epoch_idx):
        self._rec("epoch_end", epoch_idx)

    def on_training_workload_end(self, avg_metrics, batch_metrics):
        self.count += len(batch_metrics)
        self._rec("workload_end", len(batch_metrics))

    def on_validation_start(self):
        self._rec("validation_start")

    def on_validation_epoch_start(self):
        self._rec("validation_epoch_start")

    def on_validation_epoch_end(self, outputs):
        self._rec("validation_epoch_end", len(outputs))

    def on_validation_end(self, metrics):
        self._rec("validation_end", round(metrics["accuracy"], 6))

    def on_checkpoint_load_start(self, checkpoint):
        self._rec("checkpoint_load_start")

    def on_checkpoint_save_start(self, checkpoint):
        self._rec("checkpoint_save_start")

    def on_checkpoint_write_end(self, checkpoint_dir):
        self._rec("checkpoint_write_end")

    def on_checkpoint_upload_end(self, uuid):
        self._rec("checkpoint_upload_end", uuid)

    def state_dict(self):
        return {"count": self.count}

    def load_state_dict(self, state_dict):
        self.loaded = dict(state_dict)
        self.count = state_dict["count"]

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]
