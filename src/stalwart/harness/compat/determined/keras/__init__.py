"""determined.keras: Keras training on Stalwart, as Determined 0.38.1 offers it.

`DeterminedCallback` and `TensorBoard` (0.38's way: your own `model.fit()` under `det.core.init()`), and the
deprecated `TFKerasTrial` with `TFKerasTrialContext` and `callbacks.Callback` (0.37's way: an entrypoint
`model_def:MyTrial` that the harness trains). Needs Keras 3 with TensorFlow (`pip install 'stalwart[keras]'`).
"""

try:
    import keras as _keras  # type: ignore[import-untyped]  # noqa: F401  # Keras 3 ships no type information
    import tensorflow as _tf  # type: ignore[import-untyped]  # noqa: F401  # TensorFlow ships no types
except ImportError as _missing:
    raise ImportError(f"determined.keras needs TensorFlow and Keras 3 in the trial's environment "
                      f"(pip install 'stalwart[keras]'): {_missing}") from _missing

from . import callbacks
from ._callback import DeterminedCallback, TensorBoard
from ._context import TFKerasTrainConfig, TFKerasTrialContext
from ._data import InputData
from ._rng import get_rng_state, set_rng_state
from ._trial import TFKerasTrial

__all__ = ["DeterminedCallback", "InputData", "TFKerasTrainConfig", "TFKerasTrial", "TFKerasTrialContext",
           "TensorBoard", "callbacks", "get_rng_state", "set_rng_state"]

_NOT_SERVED = {
    "TFKerasTensorBoard": "determined.keras.TensorBoard",
    "load_model_from_checkpoint_path": "keras.models.load_model on a model you save, or the checkpoint's "
                                       "model_checkpoint.weights.h5 with model.load_weights (docs/keras.md)",
}


def __getattr__(name: str) -> object:
    """Names of Determined's determined.keras that Stalwart does not serve: say so, and what to use instead."""
    if name in _NOT_SERVED:
        raise AttributeError(f"determined.keras.{name} is not implemented by Stalwart; use {_NOT_SERVED[name]}")
    raise AttributeError(f"module 'determined.keras' has no attribute {name!r}")
