"""`det.keras.get_rng_state` / `set_rng_state`: Python's, NumPy's and TensorFlow's global random state, together."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import tensorflow as tf  # type: ignore[import-untyped]  # TensorFlow ships no type information


def get_rng_state() -> dict[str, Any]:
    """The random state of `random`, NumPy and TensorFlow's global generator, as one picklable dict."""
    generator = tf.random.get_global_generator()
    return {"np_rng_state": np.random.get_state(), "random_rng_state": random.getstate(),
            "tf2_rng_global_algorithm": generator.algorithm, "tf2_rng_global_state": generator.state.numpy()}


def set_rng_state(rng_state: dict[str, Any]) -> None:
    """Restore what `get_rng_state()` returned."""
    np.random.set_state(rng_state["np_rng_state"])
    random.setstate(rng_state["random_rng_state"])
    if "tf2_rng_global_algorithm" in rng_state and "tf2_rng_global_state" in rng_state:
        tf.random.set_global_generator(tf.random.Generator.from_state(
            rng_state["tf2_rng_global_state"], rng_state["tf2_rng_global_algorithm"]))
