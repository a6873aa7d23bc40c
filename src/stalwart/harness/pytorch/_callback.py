"""PyTorchCallback: hooks the Trainer calls around training, validation and checkpoints."""

from __future__ import annotations

from typing import Any


class PyTorchCallback:
    """Subclass and override any hook; return instances from `PyTorchTrial.build_callbacks()`.

    A callback's `state_dict()` is saved in every checkpoint under its name and given back to
    `load_state_dict()` when the trial resumes.
    """

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        """Before anything else in `fit()`, even before the checkpoint is loaded."""

    def on_trial_shutdown(self) -> None:
        """When `fit()` ends, normally or with an exception."""

    def on_training_start(self) -> None:
        """After the checkpoint (if any) is loaded, before the first batch."""

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        """Before the first batch of each epoch."""

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        """After the last batch of each epoch."""

    def on_training_workload_end(self, avg_metrics: dict[str, Any], batch_metrics: list[dict[str, Any]]) -> None:
        """After each reporting period's training metrics are reduced."""

    def on_validation_start(self) -> None:
        """Before a validation."""

    def on_validation_epoch_start(self) -> None:
        """Before the first validation batch (only with `evaluate_batch`)."""

    def on_validation_epoch_end(self, outputs: list[Any]) -> None:
        """After the last validation batch, with every batch's metrics (only with `evaluate_batch`)."""

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        """After a validation, with its reduced metrics."""

    def on_checkpoint_load_start(self, checkpoint: dict[str, Any]) -> None:
        """With the loaded `state_dict.pth` contents, before they are applied."""

    def on_checkpoint_save_start(self, checkpoint: dict[str, Any]) -> None:
        """With the dict about to be written to `state_dict.pth`; may add entries."""

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        """After the checkpoint's files are written to `checkpoint_dir`."""

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        """After the checkpoint is stored (and registered, on a cluster)."""

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """Deprecated alias of `on_checkpoint_write_end`."""

    def state_dict(self) -> dict[str, Any]:
        """State to keep in checkpoints."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict()` returned."""
