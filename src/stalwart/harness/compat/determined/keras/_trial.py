"""`det.keras.TFKerasTrial` (Determined 0.37, deprecated in 0.38): a Keras model defined by hooks.

Subclass it, build the model in `build_model()` (wrap it with `context.wrap_model()` and compile it), return the
data from `build_training_data_loader()` / `build_validation_data_loader()`, and name it as the entrypoint
(`entrypoint: model_def:MyTrial`). The harness (`_trial_run`) trains it with `model.fit()` and
`DeterminedCallback` for the searcher's length, validating and checkpointing as the config says.
"""

from __future__ import annotations

import abc
from typing import Any

from .._trial_layer import LegacyTrial
from ._context import TFKerasTrialContext


class TFKerasTrial(LegacyTrial):
    """A Keras trial: the harness calls these hooks and runs `model.fit()` itself."""

    trial_context_class = TFKerasTrialContext

    def __init__(self, context: TFKerasTrialContext) -> None:
        """Keep `context`; override to build state the other hooks share."""
        self.context = context

    @abc.abstractmethod
    def build_model(self) -> Any:
        """Return the model, wrapped with `context.wrap_model()` and compiled."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> Any:
        """Return (x, y), (x, y, sample_weight), a wrapped tf.data.Dataset or a keras.utils.Sequence."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> Any:
        """Return the validation data, in any of the forms build_training_data_loader() may return."""

    def keras_callbacks(self) -> list[Any]:
        """Keras callbacks to train with; det.keras.callbacks.Callback subclasses get the workload hooks too."""
        return []
