"""A Keras 3 model's state in a checkpoint directory: its weights (`save_weights`) and its optimizer's variables.

Keras 3's `model.save_weights()` keeps only the model's own variables, so the optimizer's (iteration count,
learning rate, moments) go next to them in a NumPy archive; restoring both resumes training where it stopped.
"""

from __future__ import annotations

import logging
import pathlib
from typing import Any

import numpy as np

log = logging.getLogger("determined.keras")

WEIGHTS_SUFFIX = ".weights.h5"
"""Keras 3 refuses a `save_weights()` path without it."""
OPTIMIZER_SUFFIX = ".optimizer.npz"


def optimizer_path(weights_path: str | pathlib.Path) -> pathlib.Path:
    """Where the optimizer's variables of the weights file `weights_path` go."""
    name = pathlib.Path(weights_path).name.removesuffix(WEIGHTS_SUFFIX)
    return pathlib.Path(weights_path).with_name(name + OPTIMIZER_SUFFIX)


def save_model_state(model: Any, weights_path: str | pathlib.Path) -> None:
    """Write the model's weights to `weights_path` and its optimizer's variables beside them."""
    model.save_weights(str(weights_path))
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not optimizer.built:
        return
    values = [np.asarray(v.numpy()) for v in optimizer.variables]
    with optimizer_path(weights_path).open("wb") as f:
        np.savez(f, *values)


def load_model_state(model: Any, weights_path: str | pathlib.Path) -> None:
    """Load what `save_model_state` wrote; a missing or mismatched optimizer file leaves a fresh optimizer."""
    if not pathlib.Path(weights_path).exists():
        raise FileNotFoundError(f"the checkpoint has no model weights at {weights_path}: was it written by "
                                "det.keras.DeterminedCallback (or a TFKerasTrial) with Keras 3?")
    model.load_weights(str(weights_path))
    optimizer = getattr(model, "optimizer", None)
    saved = optimizer_path(weights_path)
    if optimizer is None or not saved.exists():
        return
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    with np.load(saved) as archive:
        values = [archive[f"arr_{i}"] for i in range(len(archive.files))]
    variables = list(optimizer.variables)
    shapes_match = len(values) == len(variables) and all(
        tuple(v.shape) == tuple(value.shape) for v, value in zip(variables, values, strict=True))
    if not shapes_match:
        log.warning("the checkpoint's optimizer state does not fit this model's optimizer; "
                    "training goes on with a freshly initialized optimizer")
        return
    for variable, value in zip(variables, values, strict=True):
        variable.assign(value)
