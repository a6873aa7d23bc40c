"""`det.keras.TFKerasTrialContext` (Determined 0.37): what a TFKerasTrial's hooks get, on top of det.TrialContext.

`wrap_model`, `wrap_optimizer` and `wrap_dataset` record what the trial built (one worker needs no sharding or
distributed optimizer); `configure_fit` keeps the `model.fit()` settings the harness honours; the batch sizes come
from `hyperparameters.global_batch_size`.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from .._trial_layer import TrialContext

log = logging.getLogger("determined.keras")


class TFKerasTrainConfig(NamedTuple):
    """What a TFKerasTrial trains on: its data and its Keras callbacks."""

    training_data: Any
    validation_data: Any
    callbacks: list[Any]


class _ArgNotProvided:
    """configure_fit's marker for "leave this setting as it is" where None is a value."""


_NOT_GIVEN = _ArgNotProvided()


class TFKerasTrialContext(TrialContext):
    """The context of a TFKerasTrial: config, hyperparameters, batch sizes and the model it builds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        global_batch_size = self.env.hparams.get("global_batch_size")
        if not isinstance(global_batch_size, int) or isinstance(global_batch_size, bool) or global_batch_size < 1:
            raise ValueError("a TFKerasTrial needs hyperparameters.global_batch_size, a positive integer; "
                             f"got {global_batch_size!r}")
        slots = max(1, self.distributed.size)
        if global_batch_size < slots:
            raise ValueError(f"global_batch_size {global_batch_size} is smaller than slots_per_trial {slots}")
        self._global_batch_size = global_batch_size
        self._per_slot_batch_size = global_batch_size // slots
        self.dataset_initialized = False
        self.model: Any = None
        self._optimizers: list[Any] = []
        self._fit_verbose = True
        self._fit_class_weight: Any = None
        self._fit_shuffle = True
        self._fit_validation_steps: Any = None

    def get_global_batch_size(self) -> int:
        return self._global_batch_size

    def get_per_slot_batch_size(self) -> int:
        return self._per_slot_batch_size

    def wrap_model(self, model: Any) -> Any:
        """Register the trial's model; call it in build_model() before `model.compile()`."""
        self.model = model
        return model

    def wrap_optimizer(self, optimizer: Any) -> Any:
        """Register an optimizer the trial compiles its model with."""
        self._optimizers.append(optimizer)
        return optimizer

    def wrap_dataset(self, dataset: Any, shard_dataset: bool = True) -> Any:
        """Register a `tf.data.Dataset` the trial's data loaders return (one worker: nothing to shard)."""
        self.dataset_initialized = True
        return dataset

    def configure_fit(self, verbose: bool | None = None, class_weight: Any = _NOT_GIVEN, workers: int | None = None,
                      use_multiprocessing: bool | None = None, max_queue_size: int | None = None,
                      shuffle: bool | None = None, validation_steps: Any = _NOT_GIVEN) -> None:
        """Settings of `model.fit()`; a later call changes only what it names. workers, use_multiprocessing and
        max_queue_size are accepted and ignored (Keras 3's fit() has no such arguments)."""
        if verbose is not None:
            self._fit_verbose = bool(verbose)
        if class_weight is not _NOT_GIVEN:
            self._fit_class_weight = class_weight
        if shuffle is not None:
            self._fit_shuffle = bool(shuffle)
        if validation_steps is not _NOT_GIVEN:
            self._fit_validation_steps = validation_steps
        if workers is not None or use_multiprocessing is not None or max_queue_size is not None:
            log.info("configure_fit: workers, use_multiprocessing and max_queue_size have no effect with Keras 3")

