"""The training loop behind Trainer.fit(): train in periods, report, validate, checkpoint, resume exactly."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import torch

from stalwart.harness.core import Context, EarlyExitReason
from stalwart.harness.errors import InvalidHP
from stalwart.harness.pytorch import _checkpoint as ckpt, _log
from stalwart.harness.pytorch._callback import PyTorchCallback
from stalwart.harness.pytorch._context import PyTorchTrialContext
from stalwart.harness.pytorch._evaluation import Evaluator
from stalwart.harness.pytorch._loaders import build_loaders
from stalwart.harness.pytorch._policy import CheckpointPolicy
from stalwart.harness.pytorch._reducer import (
    Metrics,
    average_batches,
    average_batches_across_ranks,
    batch_rows,
    columns,
    plain,
)
from stalwart.harness.pytorch._trial import PyTorchTrial
from stalwart.harness.pytorch._units import NEVER, Batch, Epoch, TrainUnit

log = logging.getLogger("stalwart.pytorch")

TRAIN, VALIDATE, CHECKPOINT, REPORT, STOP = "train", "validate", "checkpoint", "report", "stop"
_ORDER = (TRAIN, VALIDATE, CHECKPOINT, REPORT, STOP)


class ShouldExit(Exception):
    """Leaves the training loop from anywhere; the loop checkpoints unsaved work unless told not to."""

    def __init__(self, skip_exit_checkpoint: bool = False, user_stop: bool = False) -> None:
        super().__init__()
        self.skip_exit_checkpoint = skip_exit_checkpoint
        self.user_stop = user_stop


@dataclasses.dataclass
class FitSettings:
    """Trainer.fit()'s arguments, resolved for on- or off-cluster training."""

    max_length: TrainUnit
    validation_period: TrainUnit
    checkpoint_period: TrainUnit
    reporting_period: TrainUnit
    checkpoint_policy: str
    latest_checkpoint: str | None
    step_zero_validation: bool
    test_mode: bool
    searcher_metric: str | None
    smaller_is_better: bool
    on_cluster: bool
    trial_id: int
    data_seed: int


def _length(unit: TrainUnit) -> int:
    """The int count of a training length (max_length is a period, never a schedule)."""
    if not isinstance(unit.value, int):
        raise TypeError("max_length must be Batch(n) or Epoch(n) with an int n")
    return unit.value


class TrialController:
    """Runs one fit(): the training periods and, at their boundaries, reports, validations and checkpoints."""

    def __init__(self, trial: PyTorchTrial, context: PyTorchTrialContext, settings: FitSettings) -> None:
        if not isinstance(trial, PyTorchTrial):
            raise TypeError(f"Trainer needs a PyTorchTrial, got {type(trial).__name__}")
        if not context.models:
            raise ValueError("the trial wrapped no model: call context.wrap_model() in __init__")
        if not context.optimizers:
            raise ValueError("the trial wrapped no optimizer: call context.wrap_optimizer() in __init__")
        if context._core is None:
            raise ValueError("the Trainer needs a context with a Core API context: build it with "
                             "stalwart.pytorch.init()")
        self.trial, self.context, self.s = trial, context, settings
        self.core: Context = context._core
        self.dist = context.distributed
        self.is_chief = self.dist.rank == 0
        self.evaluator = Evaluator(trial, context, settings.test_mode)
        self.callbacks: dict[str, PyTorchCallback] = trial.build_callbacks() or {}
        self.state = ckpt.TrialState(trial_id=settings.trial_id, data_seed=settings.data_seed)
        self.checkpoints: list[str] = []
        self.policy = CheckpointPolicy(settings.checkpoint_policy, settings.searcher_metric, settings.smaller_is_better,
                                       settings.on_cluster, self.core.train)
        self._boundaries: list[tuple[str, TrainUnit]] = [
            (TRAIN, Batch(1) if settings.test_mode else settings.max_length), (VALIDATE, settings.validation_period),
            (CHECKPOINT, settings.checkpoint_period), (REPORT, settings.reporting_period)]

    # -- set-up ---------------------------------------------------------------------------------
    def run(self) -> None:
        _log.make_visible()
        with contextlib.ExitStack() as stack:
            loaded = self._read_checkpoint()
            for cb in self.callbacks.values():
                cb.on_trial_startup(self.state.batches_trained, self.s.latest_checkpoint)
                stack.callback(cb.on_trial_shutdown)
            loaders = build_loaders(self.trial, self.context, batches_trained=self.state.batches_trained,
                                    seed=self.state.data_seed, evaluate_batch_defined=self.evaluator.per_batch)
            self.evaluator.loader = loaders.validation
            self._train_iter: Iterator[Any] = iter(loaders.train)
            stack.callback(self._close_iterator)
            if loaded is not None:
                for cb in self.callbacks.values():
                    cb.on_checkpoint_load_start(loaded)
                ckpt.apply_state(loaded, self.context, self.callbacks)
            self.context._steps_completed = self.state.batches_trained
            for cb in self.callbacks.values():
                cb.on_training_start()
            if self.is_chief:
                _log.starting(self._boundaries[0][1], self.s.validation_period, self.s.checkpoint_period,
                              self.policy.name, self.state.batches_trained, self.dist.size)
            self._run()

    def _close_iterator(self) -> None:
        del self._train_iter

    def _read_checkpoint(self) -> ckpt.State | None:
        uuid = self.s.latest_checkpoint
        if uuid is None:
            return None
        log.info("restoring trial from checkpoint %s", uuid)
        with self.core.checkpoint.restore_path(uuid) as path:
            loaded, data = ckpt.read(path)
            saved = ckpt.read_trial_state(path, data)
        if saved is not None and saved.get("trial_id", 0) == self.s.trial_id:
            self.state = ckpt.TrialState.from_dict(saved)
            if self.state.data_seed is None:
                self.state.data_seed = self.s.data_seed
        else:
            log.info("checkpoint %s is from another trial: loading its weights, starting at batch 0", uuid)
        return loaded

    # -- the loop -------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            if self.s.step_zero_validation and self.state.batches_trained == 0 and self.state.last_val == 0 \
                    and not self.s.test_mode:
                self._validate()
            length = self._boundaries[0][1]
            while self._remaining(length) > 0:
                hit, metrics = self._train_period()
                self._report_training(metrics)
                for kind in _ORDER:
                    if kind in hit:
                        self._on_boundary(kind)
                        self._check_stop()
            if not self._validation_is_current():
                self._validate()
            if not self._checkpoint_is_current():
                self._checkpoint()
            self._report_progress(final=True)
            if self.is_chief:
                _log.finished(self.state.batches_trained, "complete")
        except ShouldExit as e:
            if not e.skip_exit_checkpoint and not self._checkpoint_is_current():
                self._checkpoint()
            if e.user_stop and self.s.on_cluster and self.is_chief:
                self.core.train.report_early_exit(EarlyExitReason.USER_REQUESTED_STOP)
            if self.is_chief:
                _log.finished(self.state.batches_trained, "stopped as the trial asked" if e.user_stop
                              else "stopped at the master's request (pause, preemption or the searcher)")
        except InvalidHP:
            if not self._checkpoint_is_current():
                self._checkpoint()
            raise

    def _remaining(self, unit: TrainUnit) -> int:
        done = self.state.epochs_trained if isinstance(unit, Epoch) else self.state.batches_trained
        return _length(unit) - done

    def _checkpoint_is_current(self) -> bool:
        return self.state.last_ckpt == self.state.batches_trained

    def _validation_is_current(self) -> bool:
        return self.state.last_val == self.state.batches_trained

    def _on_boundary(self, kind: str) -> None:
        if kind in (TRAIN, REPORT):
            self._report_progress()
        elif kind == VALIDATE and not self._validation_is_current():
            self._validate()
        elif kind == CHECKPOINT and not self._checkpoint_is_current():
            self._checkpoint()

    def _check_stop(self) -> None:
        if self.core.preempt.should_preempt():
            log.info("preemption requested: checkpointing and exiting")
            raise ShouldExit()
        stop = self.context.get_stop_requested()
        if self.dist.size > 1:
            stop = any(self.dist.allgather(stop))  # any worker may ask; all stop at the same batch
        if stop:
            raise ShouldExit(user_stop=True)

    def _train_period(self) -> tuple[set[str], list[Metrics]]:
        """Train until a boundary (validation, checkpoint, report, the end...) is reached."""
        ctx, state, callbacks = self.context, self.state, list(self.callbacks.values())
        self._period = (time.monotonic(), state.batches_trained)
        for model in ctx.models:
            model.train()
        ctx.reset_reducers()
        epoch_len = ctx._epoch_length()
        batch_bounds = [(k, u) for k, u in self._boundaries if isinstance(u, Batch) and u != NEVER]
        epoch_bounds = [(k, u) for k, u in self._boundaries if isinstance(u, Epoch)]
        to_device = ctx.to_device if ctx.experimental._auto_to_device else None
        metrics: list[Metrics] = []
        hit: set[str] = set()
        while not hit:
            batch_idx = state.batches_trained
            epoch_idx, in_epoch = divmod(batch_idx, epoch_len)
            batch = next(self._train_iter)
            ctx._current_batch_idx = batch_idx
            if in_epoch == 0:
                for cb in callbacks:
                    cb.on_training_epoch_start(epoch_idx)
            metrics.append(self._train_batch(batch if to_device is None else to_device(batch), epoch_idx, batch_idx,
                                             epoch_len))
            state.batches_trained = batches = batch_idx + 1
            for kind, batch_unit in batch_bounds:
                if batch_unit.should_stop(batches):
                    hit.add(kind)
            if in_epoch == epoch_len - 1:
                for cb in callbacks:
                    cb.on_training_epoch_end(epoch_idx)
                state.epochs_trained += 1
                for kind, epoch_unit in epoch_bounds:
                    if epoch_unit.should_stop(epoch_idx + 1):
                        hit.add(kind)
            if ctx._stop_requested and self.dist.size == 1:
                hit.add(STOP)  # with several workers, a stop is agreed on at the next boundary instead
        return hit, metrics

    def _train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Metrics:
        ctx = self.context
        out = self.trial.train_batch(batch=batch, epoch_idx=epoch_idx, batch_idx=batch_idx)
        if isinstance(out, torch.Tensor):
            out = {"loss": out.detach()}
        elif isinstance(out, dict):
            out = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in out.items()}
        else:
            raise TypeError(f"train_batch() must return a Tensor or a dict of metrics, got {type(out).__name__}")
        if (ctx.lr_schedulers or ctx.experimental._auto_amp) and ctx._should_communicate_and_update():
            if ctx.experimental._auto_amp and ctx._scaler is not None:
                ctx._scaler.update()
            for scheduler in ctx.lr_schedulers:
                scheduler.auto_step(batch_idx, epoch_len, ctx._aggregation_frequency)
        return out

    # -- reporting ------------------------------------------------------------------------------
    def _with_progress(self, metrics: Metrics) -> Metrics:
        """`batches` and `epochs` (completed) added, unless the trial reports metrics of those names."""
        return {"batches": self.state.batches_trained, "epochs": self.state.epochs_trained, **metrics}

    def _report_training(self, batch_metrics: list[Metrics]) -> None:
        if self.dist.size > 1:
            avg = average_batches_across_ranks(batch_metrics, self.dist.allgather)
        else:
            avg = average_batches(batch_metrics)
        if self.context._reducers:
            avg.update({k: plain(v) for k, v in self.context.reduce_metrics(for_training=True).items()})
        if self.is_chief:
            self.core.train.report_training_metrics(self.state.batches_trained, self._with_progress(avg))
            started, first = self._period
            batches = self.state.batches_trained - first
            gbs = self.context._global_batch_size
            _log.trained(batches, gbs * batches if gbs else None, time.monotonic() - started,
                         self.state.batches_trained, self._boundaries[0][1], avg)
        if self.callbacks:
            rows = batch_rows(columns(batch_metrics))
            for cb in self.callbacks.values():
                cb.on_training_workload_end(avg_metrics=avg, batch_metrics=rows)

    def _report_progress(self, final: bool = False) -> None:
        if not (self.s.on_cluster and self.is_chief):
            return
        length = self._boundaries[0][1]
        done = self.state.epochs_trained if isinstance(length, Epoch) else self.state.batches_trained
        fraction = 1.0 if final else min(1.0, done / max(_length(length), 1))
        self.core.train.report_progress(fraction)

    # -- validation -----------------------------------------------------------------------------
    def _validate(self) -> Metrics:
        ctx = self.context
        started = time.monotonic()
        ctx.reset_reducers()
        for model in ctx.models:
            model.eval()
        for cb in self.callbacks.values():
            cb.on_validation_start()
        with ckpt.rng_isolated(ctx), torch.no_grad():
            metrics = self.evaluator.evaluate(self.callbacks.values())
            metrics.update({k: plain(v) for k, v in ctx.reduce_metrics(for_training=False).items()})
        if self.dist.size > 1 and not self.evaluator.per_batch:
            metrics = self.dist.broadcast(metrics)
        for cb in self.callbacks.values():
            cb.on_validation_end(metrics)
        self.state.last_val = self.state.batches_trained
        should_checkpoint = False
        if self.is_chief:
            searcher_value = self.policy.searcher_value(metrics)
            before = self.policy.best_before(self.state)
            self.core.train.report_validation_metrics(self.state.batches_trained, self._with_progress(metrics))
            _log.validated(self.state.batches_trained, time.monotonic() - started, metrics)
            should_checkpoint = self.policy.says_checkpoint(searcher_value, before, self.state)
        if self.dist.broadcast(should_checkpoint) and not self._checkpoint_is_current():
            self._checkpoint()
        return metrics

    # -- checkpoints ----------------------------------------------------------------------------
    def _checkpoint(self) -> None:
        self.state.last_ckpt = self.state.batches_trained
        uuid = ""
        if self.is_chief:
            started = time.monotonic()
            metadata = {"steps_completed": self.state.batches_trained, "framework": f"torch-{torch.__version__}",
                        "format": "pickle", "trainer": "stalwart.pytorch"}
            with self.core.checkpoint.store_path(metadata) as (path, storage_id):
                self._save(path)
                uuid = storage_id
            _log.checkpointed(uuid, self.state.batches_trained, time.monotonic() - started)
        uuid = self.dist.broadcast(uuid)
        self.checkpoints.append(uuid)
        for cb in self.callbacks.values():
            cb.on_checkpoint_upload_end(uuid=uuid)

    def _save(self, path: pathlib.Path) -> None:
        state = ckpt.build_state(self.context, self.callbacks)
        for cb in self.callbacks.values():
            cb.on_checkpoint_save_start(state)
        ckpt.write(path, state, ckpt.load_data(self.context, self.trial, self.state))
        for cb in self.callbacks.values():
            cb.on_checkpoint_end(str(path))
            cb.on_checkpoint_write_end(str(path))
