"""`det.keras.callbacks` (Determined 0.37): the Keras callback with a TFKerasTrial's extra hooks.

A TFKerasTrial trains in workloads of `scheduling_unit` batches; its harness calls `on_train_workload_begin` /
`on_train_workload_end` around each one, `on_checkpoint_end` after writing each checkpoint (files added to the
directory are stored with it), and saves `get_state()` in the checkpoint, handing it to `load_state()` on resume.
Plain Keras callbacks work too; only subclasses of this one get the extra hooks.
"""

from __future__ import annotations

from typing import Any

import keras  # type: ignore[import-untyped]  # Keras 3 ships no type information


class Callback(keras.callbacks.Callback):  # type: ignore[misc]  # Keras is untyped
    """A Keras callback with the hooks of Determined's TFKerasTrial harness (all do nothing unless overridden)."""

    def on_train_workload_begin(self, total_batches_trained: int, batches_requested: int | None,
                                logs: dict[str, Any]) -> None:
        """Before a workload of up to `batches_requested` batches; `logs` is empty."""

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        """After a workload; `logs` holds the training metrics of its last batch."""

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """After the harness wrote a checkpoint into `checkpoint_dir`, before it is stored."""

    def get_state(self) -> Any:
        """A picklable value saved with each checkpoint."""
        return None

    def load_state(self, state: Any) -> None:
        """Receive what `get_state()` returned when the checkpoint being resumed was written."""


_NOT_SERVED = {
    "EarlyStopping": "keras.callbacks.EarlyStopping",
    "ReduceLROnPlateau": "keras.callbacks.ReduceLROnPlateau",
    "TensorBoard": "determined.keras.TensorBoard",
}


def __getattr__(name: str) -> Any:
    """Determined 0.37's workload-aware versions of Keras callbacks are not here: say so, and what to use."""
    if name in _NOT_SERVED:
        raise AttributeError(f"determined.keras.callbacks.{name} is not implemented by Stalwart; use "
                             f"{_NOT_SERVED[name]} (a TFKerasTrial trains in one model.fit(), so plain Keras "
                             "callbacks see every epoch)")
    raise AttributeError(f"module 'determined.keras.callbacks' has no attribute {name!r}")
