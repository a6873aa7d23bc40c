"""The TFKerasTrial harness: one `model.fit()` with a DeterminedCallback subclass, as `_plan` lays it out.

Run for an entrypoint `model_def:MyTrial` whose class is a TFKerasTrial (the legacy Trial launcher hands it
over). The trial resumes from `latest_checkpoint` when the checkpoint is its own (the continue id is the trial id)
and starts from its weights otherwise; validation metrics are reported as `val_<metric>`, as Determined 0.37 did.
"""

from __future__ import annotations

import logging
import pathlib
import pickle
from typing import Any

from stalwart.harness import core
from stalwart.harness.info import get_cluster_info

from .._env_context import env_from_cluster_info
from . import _data
from ._callback import DeterminedCallback, _metrics
from ._context import TFKerasTrialContext
from ._plan import FitPlan, fit_plan
from ._trial import TFKerasTrial
from .callbacks import Callback

log = logging.getLogger("determined.keras")

CALLBACK_STATES = "determined-callbacks.v1.pkl"


class _TrialCallback(DeterminedCallback):
    """DeterminedCallback with a TFKerasTrial's extras: workload hooks, callback states, stop requests."""

    def __init__(self, context: TFKerasTrialContext, plan: FitPlan, checkpoint: str | None,
                 user_callbacks: list[Any]) -> None:
        super().__init__(context._core, checkpoint, context.get_trial_id(),
                         train_metrics_report_period=plan.report_period, checkpoint_epochs=plan.checkpoint_epochs)
        self._context = context
        self._plan = plan
        self._workload = plan.report_period
        self._hooked = [cb for cb in user_callbacks if isinstance(cb, Callback)]
        self._last_logs: dict[str, Any] = {}

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self._steps_completed % self._workload == 0:
            for cb in self._hooked:
                cb.on_train_workload_begin(self._steps_completed, self._workload, {})

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        super().on_train_batch_end(batch, logs)
        self._last_logs = _metrics(logs)
        if self._steps_completed % self._workload == 0:
            self._end_workload()

    def _end_workload(self) -> None:
        for cb in self._hooked:
            cb.on_train_workload_end(self._steps_completed, dict(self._last_logs))

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        super().on_epoch_end(epoch, logs)
        if self._context.get_stop_requested():
            log.info("stopping training after batch %d: the trial asked to stop", self._steps_completed)
            self.model.stop_training = True

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._steps_completed % self._workload:  # the last, shorter workload
            self._end_workload()
        super().on_train_end(logs)

    def _report_validation(self, metrics: dict[str, Any]) -> None:
        super()._report_validation({f"val_{k}": v for k, v in metrics.items()})

    def _saved(self, path: pathlib.Path) -> None:
        for cb in self._hooked:
            cb.on_checkpoint_end(str(path))
        with (path / CALLBACK_STATES).open("wb") as f:
            pickle.dump([cb.get_state() for cb in self._hooked], f)

    def _restored(self, path: pathlib.Path, state: dict[str, Any]) -> None:
        # epochs are counted in this run's epoch length, which the last run's may differ from
        self.model._initial_epoch = self._steps_completed // self._plan.batches_per_epoch
        states_path = path / CALLBACK_STATES
        if not states_path.exists():
            return
        with states_path.open("rb") as f:
            states = pickle.load(f)
        if len(states) != len(self._hooked):
            log.warning("the checkpoint holds %d callback states, this trial has %d det.keras callbacks: "
                        "their states are not restored", len(states), len(self._hooked))
            return
        for cb, cb_state in zip(self._hooked, states, strict=True):
            cb.load_state(cb_state)


def _built_model(trial: TFKerasTrial, context: TFKerasTrialContext) -> Any:
    model = trial.build_model()
    if context.model is None:
        raise ValueError("build_model() must wrap its model with self.context.wrap_model(model)")
    if not getattr(model, "compiled", getattr(model, "optimizer", None) is not None):
        raise ValueError("build_model() must compile its model (model.compile(...)) before returning it")
    return model


def _fit(trial: TFKerasTrial, context: TFKerasTrialContext, target_length: int | None) -> None:
    batch_size = context.get_per_slot_batch_size()
    train = trial.build_training_data_loader()
    validation = trial.build_validation_data_loader()
    model = _built_model(trial, context)
    plan = fit_plan(context.get_experiment_config(), global_batch_size=context.get_global_batch_size(),
                    loader_batches=_data.batches_per_epoch(train, batch_size), target_length=target_length,
                    batches_done=context.env.steps_completed)
    log.info("training %d batches as %d Keras epochs of %d batches", plan.epochs * plan.batches_per_epoch,
             plan.epochs, plan.batches_per_epoch)
    user_callbacks = list(trial.keras_callbacks() or [])
    callback = _TrialCallback(context, plan, context.env.latest_checkpoint, user_callbacks)
    stream = _data.training_stream(train, batch_size=batch_size, shuffle=context._fit_shuffle,
                                   seed=context.get_trial_seed(), batches_done=context.env.steps_completed,
                                   dataset_wrapped=context.dataset_initialized)
    model.fit(
        stream, epochs=plan.epochs, steps_per_epoch=plan.batches_per_epoch,
        validation_data=_data.validation_data(validation, batch_size=batch_size,
                                              dataset_wrapped=context.dataset_initialized),
        validation_steps=context._fit_validation_steps, validation_freq=plan.validation_epochs,
        shuffle=False, class_weight=context._fit_class_weight, callbacks=[callback, *user_callbacks],
        verbose=1 if context._fit_verbose else 0,
    )


def run_trial(trial_class: type[TFKerasTrial]) -> None:
    """Train the TFKerasTrial `trial_class` as this trial of the cluster."""
    info = get_cluster_info()
    if info is None or info.trial is None:
        raise RuntimeError("a TFKerasTrial runs as a trial on a cluster (stalwart experiment create ...)")
    env = env_from_cluster_info(info)
    if env.experiment_config.slots_per_trial() > 1:
        raise ValueError("Stalwart runs a TFKerasTrial on one slot: set resources.slots_per_trial to 1, or move to "
                         "det.keras.DeterminedCallback with a tf.distribute strategy")
    import keras  # type: ignore[import-untyped]  # Keras 3 ships no type information

    keras.utils.set_random_seed(env.trial_seed)
    with core.init() as core_context:
        context = trial_class.trial_context_class(core_context, env)
        if not isinstance(context, TFKerasTrialContext):
            raise TypeError(f"{trial_class.__name__}.trial_context_class must be a TFKerasTrialContext subclass")
        _fit(trial_class(context), context, info.trial.target_length)
