"""LRScheduler: a torch LR scheduler plus when the Trainer steps it (StepMode, frequency)."""

from __future__ import annotations

import enum
from typing import Any

import torch


class LRScheduler:
    """Wraps a torch scheduler; `context.wrap_lr_scheduler` makes these and the Trainer steps them."""

    class StepMode(enum.Enum):
        STEP_EVERY_EPOCH = 1
        STEP_EVERY_BATCH = 2
        MANUAL_STEP = 3
        STEP_EVERY_OPTIMIZER_STEP = 4

    def __init__(self, scheduler: torch.optim.lr_scheduler.LRScheduler, step_mode: LRScheduler.StepMode,
                 frequency: int = 1) -> None:
        if not isinstance(step_mode, LRScheduler.StepMode):
            raise TypeError(f"step_mode must be an LRScheduler.StepMode, got {step_mode!r}")
        if not isinstance(frequency, int) or frequency < 1:
            raise ValueError(f"frequency must be an integer >= 1, got {frequency!r}")
        self._scheduler = scheduler
        self._step_mode = step_mode
        self._frequency = frequency

    @property
    def scheduler(self) -> torch.optim.lr_scheduler.LRScheduler:
        return self._scheduler

    def step(self, *args: Any, **kwargs: Any) -> None:
        self._scheduler.step(*args, **kwargs)

    def get_last_lr(self) -> list[float | torch.Tensor]:
        return self._scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        return self._scheduler.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._scheduler.load_state_dict(state_dict)

    def auto_step(self, batch_idx: int, epoch_len: int, aggregation_frequency: int) -> None:
        """Step after batch `batch_idx` (0-based) as the step mode says; called only on optimizer-step batches."""
        mode, freq = self._step_mode, self._frequency
        if mode is LRScheduler.StepMode.STEP_EVERY_BATCH:
            for i in range(batch_idx - aggregation_frequency + 1, batch_idx + 1):
                if (i + 1) % freq == 0:
                    self._scheduler.step()
        elif mode is LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP:
            if (batch_idx + 1) % freq == 0:
                self._scheduler.step()
        elif mode is LRScheduler.StepMode.STEP_EVERY_EPOCH:
            # Step for each epoch that ends before the next optimizer step.
            for e in range(batch_idx // epoch_len, (batch_idx + aggregation_frequency) // epoch_len):
                if (e + 1) % freq == 0:
                    self._scheduler.step()
