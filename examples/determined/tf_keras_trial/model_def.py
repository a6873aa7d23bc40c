"""A Determined 0.37 TFKerasTrial (entrypoint: model_def:PlaneTrial): a small dense classifier on synthetic data.

The harness builds the model and data through these hooks and trains it for searcher.max_length, validating and
checkpointing every min_validation_period / min_checkpoint_period.
"""

import time

import keras
import numpy as np
from determined import keras as det_keras

FEATURES = 8


def synthetic_data(seed: int, records: int) -> tuple[np.ndarray, np.ndarray]:
    """Points labelled by the side of a fixed hyperplane they fall on."""
    x = np.random.default_rng(seed).normal(size=(records, FEATURES)).astype("float32")
    plane = np.linspace(-1.0, 1.0, FEATURES).astype("float32")
    return x, (x @ plane > 0).astype("float32")


class WorkloadCounter(det_keras.callbacks.Callback):
    """Counts the training workloads across pauses (its count is saved with each checkpoint)."""

    def __init__(self) -> None:
        super().__init__()
        self.workloads = 0

    def on_train_workload_end(self, total_batches_trained: int, logs: dict) -> None:
        self.workloads += 1
        print(f"workload {self.workloads} ended at batch {total_batches_trained}: loss {logs.get('loss'):.4f}")

    def get_state(self) -> int:
        return self.workloads

    def load_state(self, state: int) -> None:
        self.workloads = state


class BatchSleep(keras.callbacks.Callback):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        time.sleep(self.seconds)


class PlaneTrial(det_keras.TFKerasTrial):
    def __init__(self, context: det_keras.TFKerasTrialContext) -> None:
        self.context = context

    def build_model(self) -> keras.Model:
        model = self.context.wrap_model(keras.Sequential([
            keras.Input(shape=(FEATURES,)),
            keras.layers.Dense(self.context.get_hparam("hidden"), activation="relu"),
            keras.layers.Dense(1, activation="sigmoid"),
        ]))
        optimizer = self.context.wrap_optimizer(keras.optimizers.Adam(self.context.get_hparam("learning_rate")))
        model.compile(optimizer, "binary_crossentropy", metrics=["accuracy"])
        return model

    def build_training_data_loader(self) -> tuple[np.ndarray, np.ndarray]:
        return synthetic_data(0, 512)

    def build_validation_data_loader(self) -> tuple[np.ndarray, np.ndarray]:
        return synthetic_data(1, 256)

    def keras_callbacks(self) -> list:
        sleep = self.context.get_hparam("batch_sleep")
        return [WorkloadCounter(), *([BatchSleep(sleep)] if sleep else [])]
