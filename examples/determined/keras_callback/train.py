"""A Keras model trained with Determined 0.38's `det.keras.DeterminedCallback`, as Determined users write it.

A small dense classifier on synthetic in-memory data: `model.fit()` is the user's own; the callback reports
metrics and progress, checkpoints every epoch, stops when the master asks, and resumes from the latest checkpoint.
It runs on a Stalwart cluster unchanged, and off-cluster with `python train.py`.
"""

import argparse
import logging
import time

import determined as det
import determined.keras
import keras
import numpy as np

FEATURES = 8


def synthetic_data(seed: int, records: int) -> tuple[np.ndarray, np.ndarray]:
    """Points labelled by the side of a fixed hyperplane they fall on."""
    x = np.random.default_rng(seed).normal(size=(records, FEATURES)).astype("float32")
    plane = np.linspace(-1.0, 1.0, FEATURES).astype("float32")
    return x, (x @ plane > 0).astype("float32")


def build_model(hparams: dict) -> keras.Model:
    model = keras.Sequential([
        keras.Input(shape=(FEATURES,)),
        keras.layers.Dense(hparams["hidden"], activation="relu"),
        keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(keras.optimizers.Adam(hparams["learning_rate"]), "binary_crossentropy", metrics=["accuracy"])
    return model


def main(core_context, checkpoint, continue_id, hparams: dict, epochs: int) -> None:
    train_x, train_y = synthetic_data(0, 512)
    model = build_model(hparams)
    callbacks = [
        det.keras.DeterminedCallback(core_context, checkpoint=checkpoint, continue_id=continue_id),
        det.keras.TensorBoard(core_context, update_freq="epoch", profile_batch=0),
    ]
    if hparams.get("batch_sleep"):  # slows training down (tests pause it mid-run)
        pause = float(hparams["batch_sleep"])
        callbacks.append(keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: time.sleep(pause)))
    model.fit(train_x, train_y, batch_size=hparams["batch_size"], epochs=epochs,
              validation_data=synthetic_data(1, 256), callbacks=callbacks)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8, help="how long to train for")
    args = parser.parse_args()
    info = det.get_cluster_info()
    if info and info.task_type == "TRIAL":
        continue_id, checkpoint, hparams = info.trial.trial_id, info.latest_checkpoint, info.trial.hparams
    else:
        continue_id, checkpoint = "local-train-task", None
        hparams = {"learning_rate": 0.01, "hidden": 16, "batch_size": 32}
    with det.core.init() as core_context:
        main(core_context, checkpoint, continue_id, hparams, args.epochs)
