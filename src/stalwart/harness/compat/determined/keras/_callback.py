"""`det.keras.DeterminedCallback` (Determined 0.38.1): tracking, checkpoints, pausing and resuming for `model.fit()`.

Per training batch it counts `steps_completed` (and reports training metrics every N batches when asked); per epoch it
reports the epoch's training metrics, progress (epoch / `epochs`), saves a checkpoint every `checkpoint_epochs` and
stops at the epoch's end when the master asks the trial to stop (pause, searcher stop, preemption). Validation
metrics are reported at the end of every evaluation. A checkpoint holds the model's weights (`model_checkpoint`
plus Keras 3's `.weights.h5`), the optimizer's state and the callback's own state (epoch, steps, `continue_id`);
restoring one with the same `continue_id` continues at the next epoch, with another one it only loads the weights
(a warm start).
"""

from __future__ import annotations

import contextlib
import logging
import pathlib
import pickle
from typing import Any

import keras  # type: ignore[import-untyped]  # Keras 3 ships no type information

from stalwart.harness.core import Context, DistributedContext

from ._weights import WEIGHTS_SUFFIX, load_model_state, save_model_state

log = logging.getLogger("determined.keras")

CHECKPOINT_FILE = "model_checkpoint" + WEIGHTS_SUFFIX
STATE_FILE = "callback_state"


def _check_period(value: object) -> int | str:
    if value == "epoch":
        return "epoch"
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ValueError(f"train_metrics_report_period must be \"epoch\" or a positive number of batches, got {value!r}")


def _metrics(logs: dict[str, Any] | None, *, validation: bool = False) -> dict[str, Any]:
    """The numbers of Keras' logs, without its bookkeeping keys (and, for training, without `val_` ones)."""
    out: dict[str, Any] = {}
    for key, value in (logs or {}).items():
        if key in ("batch", "size") or (not validation and key.startswith("val_")):
            continue
        out[key] = float(value) if hasattr(value, "__float__") else value
    return out


class DeterminedCallback(keras.callbacks.ProgbarLogger):  # type: ignore[misc]  # Keras is untyped
    """Add Determined's tracking, checkpointing, pausing and restoring to a Keras `model.fit()` call.

    It subclasses ProgbarLogger only so that Keras adds no progress bar of its own; with `verbose` it prints
    log-friendly progress lines instead. Override `save_model` / `load_model` to change how the model is stored.
    """

    _chief_worker_only = False

    def __init__(self, core_context: Context, checkpoint: str | None, continue_id: int | str, *,
                 train_metrics_report_period: int | str = "epoch", checkpoint_epochs: int = 1) -> None:
        keras.callbacks.Callback.__init__(self)
        if not isinstance(checkpoint_epochs, int) or isinstance(checkpoint_epochs, bool) or checkpoint_epochs < 0:
            raise ValueError(
                f"checkpoint_epochs must be an integer >= 0 (0: save only at the end), got {checkpoint_epochs!r}")
        self._core = core_context
        self._checkpoint = checkpoint
        self._continue_id = continue_id
        self._report_period = _check_period(train_metrics_report_period)
        self._checkpoint_epochs = checkpoint_epochs
        self._is_chief = core_context.distributed.rank == 0
        self._is_verbose = False
        self._steps_completed = 0
        self._last_ckpt_epoch = -1
        self._last_train_epoch = -1
        self._epoch_batches = 0
        self._ckpt_context: contextlib.ExitStack | None = None

    # -- what Keras' progress bar would do: nothing, or a progress line -------------------------------
    def set_params(self, params: dict[str, Any]) -> None:
        keras.callbacks.Callback.set_params(self, params)
        self._is_verbose = params.get("verbose", 0) != 0

    def on_predict_begin(self, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_predict_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_predict_end(self, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_test_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    # -- training ------------------------------------------------------------------------------------
    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._ckpt_context = self._load(self._checkpoint)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch_batches = 0
        if self._is_chief:
            self._core.train.set_status("training")

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._steps_completed += 1
        self._epoch_batches += 1
        if self._ckpt_context is not None:  # the restored files were read by now
            self._ckpt_context.close()
            self._ckpt_context = None
        if not self._is_chief:
            return
        period = self._report_period
        if isinstance(period, int) and self._steps_completed % period == 0:
            self._core.train.report_metrics("training", self._steps_completed, _metrics(logs))

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self._is_chief and self._report_period == "epoch":
            self._core.train.report_metrics("training", self._steps_completed, _metrics(logs))
        if self._is_chief and self.params.get("epochs"):
            self._core.train.report_progress(min(1.0, (epoch + 1) / self.params["epochs"]))
        if self._is_chief and self._is_verbose:
            print(f"epoch {epoch + 1} done: {self._epoch_batches} batches, total batches trained: "
                  f"{self._steps_completed}: {_metrics(logs, validation=True)}", flush=True)
        self._last_train_epoch = epoch
        if self._checkpoint_epochs > 0 and (epoch + 1) % self._checkpoint_epochs == 0:
            self._save(epoch)
        # after a possible save, which takes a while; an unsaved stop is saved by on_train_end
        if self._core.preempt.should_preempt():
            log.info("stopping training after epoch %d: the master asked this trial to stop", epoch + 1)
            self.model.stop_training = True

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._last_train_epoch > self._last_ckpt_epoch:
            self._save(self._last_train_epoch)
        self.model._initial_epoch = None  # a later fit() starts where its caller says
        if self._is_chief:
            self._core.train.set_status("finishing")

    # -- validation ----------------------------------------------------------------------------------
    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self._is_chief:
            self._core.train.set_status("validating")

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._is_chief:
            self._report_validation(_metrics(logs, validation=True))

    def _report_validation(self, metrics: dict[str, Any]) -> None:
        """Report one evaluation's metrics (a TFKerasTrial names them `val_...`, as Determined 0.37 did)."""
        self._core.train.report_metrics("validation", self._steps_completed, metrics)
        if self._is_verbose:
            print(f"validation after batch {self._steps_completed}: {metrics}", flush=True)

    # -- checkpoints ---------------------------------------------------------------------------------
    def _state(self, epoch: int) -> dict[str, Any]:
        return {"epoch": epoch, "steps_completed": self._steps_completed, "continue_id": self._continue_id}

    def _save(self, epoch: int) -> None:
        if self._is_chief:
            self._core.train.set_status("checkpointing")
        shard = self._core.distributed.size > 1
        with self._core.checkpoint.store_path({"steps_completed": self._steps_completed}, shard=shard) as (path, _):
            self.save_model(self.model, str(path / CHECKPOINT_FILE), self._core.distributed)
            if self._is_chief:
                with (path / STATE_FILE).open("wb") as f:
                    pickle.dump(self._state(epoch), f)
                self._saved(path)
        self._last_ckpt_epoch = epoch

    def _saved(self, path: pathlib.Path) -> None:
        """After the chief wrote a checkpoint into `path`, before it is uploaded: room for more files."""

    def _restored(self, path: pathlib.Path, state: dict[str, Any]) -> None:
        """After a checkpoint of this run was loaded (same continue_id): restore what `_saved` added."""

    def _load(self, checkpoint: str | None) -> contextlib.ExitStack | None:
        """Load `checkpoint`; keep its files (the returned stack) until the first batch has run."""
        if checkpoint is None:
            return None
        if self._is_chief:
            self._core.train.set_status("restoring")
        with contextlib.ExitStack() as stack:
            path = stack.enter_context(self._core.checkpoint.restore_path(checkpoint))
            self.load_model(self.model, str(path / CHECKPOINT_FILE), self._core.distributed)
            state_path = path / STATE_FILE
            if not state_path.exists():
                return None
            with state_path.open("rb") as f:
                state = pickle.load(f)
            if state.get("continue_id") != self._continue_id:
                log.info("checkpoint %s is another run's (continue_id %r): loaded its weights, training from "
                         "epoch 0", checkpoint, state.get("continue_id"))
                return None
            self._steps_completed = int(state["steps_completed"])
            self._last_ckpt_epoch = self._last_train_epoch = int(state["epoch"])
            self.model._initial_epoch = int(state["epoch"]) + 1  # how BackupAndRestore moves fit() on
            self._restored(path, state)
            log.info("resuming from checkpoint %s at epoch %d (%d batches trained)", checkpoint,
                     int(state["epoch"]) + 1, self._steps_completed)
            return stack.pop_all()
        return None

    def save_model(self, model: keras.Model, path: str, distributed: DistributedContext) -> None:
        """Save `model` (weights and optimizer state) to `path`; override to save it another way."""
        if distributed.rank == 0:
            save_model_state(model, path)

    def load_model(self, model: keras.Model, path: str, distributed: DistributedContext) -> None:
        """Load what `save_model` wrote at `path` into `model`; override along with `save_model`."""
        load_model_state(model, path)


class TensorBoard(keras.callbacks.TensorBoard):  # type: ignore[misc]  # Keras is untyped
    """Keras' TensorBoard callback writing where the trial's TensorBoard files go (its `log_dir` is ignored then)."""

    def __init__(self, core_context: Context, *args: Any, **kwargs: Any) -> None:
        det_path = core_context.train.get_tensorboard_path()
        if det_path:
            if "log_dir" in kwargs:
                log.warning("arg log_dir=%s to det.keras.TensorBoard will be ignored", kwargs.pop("log_dir"))
            elif args:
                log.warning("arg log_dir=%s to det.keras.TensorBoard will be ignored", args[0])
                args = args[1:]
            args = (str(det_path), *args)
        super().__init__(*args, **kwargs)
