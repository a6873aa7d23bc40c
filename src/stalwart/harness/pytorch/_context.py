"""PyTorchTrialContext: what a PyTorchTrial wraps its model, optimizers and schedulers with, plus trial info."""

from __future__ import annotations

import contextlib
import logging
import pathlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from stalwart.harness.core import Context, DistributedContext
from stalwart.harness.info import TrialInfo
from stalwart.harness.pytorch._data import is_on_cpu_already, to_device
from stalwart.harness.pytorch._lr_scheduler import LRScheduler
from stalwart.harness.pytorch._reducer import MetricReducer, ReducerRegistry

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

log = logging.getLogger("stalwart.pytorch")

_Optimizer = TypeVar("_Optimizer", bound=torch.optim.Optimizer)
_Scheduler = TypeVar("_Scheduler", bound=torch.optim.lr_scheduler.LRScheduler)
_Scaler = TypeVar("_Scaler", bound=torch.amp.GradScaler)


def _batch_sizes(hparams: dict[str, Any] | None, slots: int) -> tuple[int | None, int | None]:
    """(per-slot, global) batch size from hparams['global_batch_size'], or (None, None)."""
    if not hparams or hparams.get("global_batch_size") is None:
        return None, None
    global_size = int(hparams["global_batch_size"])
    per_slot = global_size // slots
    if per_slot < 1:
        raise ValueError(f"global_batch_size {global_size} is smaller than the {slots} slots of this trial")
    if per_slot * slots != global_size:
        log.warning("global_batch_size %d is not divisible by %d slots: using %d per slot (%d in all)",
                    global_size, slots, per_slot, per_slot * slots)
    return per_slot, per_slot * slots


class _Experimental:
    """`context.experimental`: switches for automatic mixed precision and the data checks."""

    def __init__(self, context: PyTorchTrialContext) -> None:
        self._context = context
        self._auto_amp = False
        self._auto_to_device = True
        self._data_repro_checks_disabled = False

    def use_amp(self) -> None:
        """Mixed precision without code changes: autocast forward passes, a GradScaler in backward/step."""
        ctx = self._context
        if ctx.models:
            raise RuntimeError("call experimental.use_amp() before wrap_model()")
        ctx.wrap_scaler(torch.amp.GradScaler(ctx.device.type))
        self._auto_amp = True

    def disable_auto_to_device(self) -> None:
        self._auto_to_device = False

    def disable_dataset_reproducibility_checks(self) -> None:
        self._data_repro_checks_disabled = True


class PyTorchTrialContext:
    """Built by `stalwart.pytorch.init()`; the trial keeps it and uses its wrap_*/backward/step methods."""

    def __init__(self, core_context: Context | None, *, hparams: dict[str, Any] | None = None,
                 exp_conf: dict[str, Any] | None = None,
                 trial_seed: int | None = None, aggregation_frequency: int = 1, steps_completed: int = 0,
                 enable_tensorboard_logging: bool = True, managed_training: bool = True,
                 device: torch.device | None = None) -> None:
        if not isinstance(aggregation_frequency, int) or aggregation_frequency < 1:
            raise ValueError(f"aggregation_frequency must be an integer >= 1, got {aggregation_frequency!r}")
        self._core = core_context
        self.distributed: DistributedContext = core_context.distributed if core_context else DistributedContext()
        self._reducers = ReducerRegistry(self.distributed.allgather)
        self._hparams, self._exp_conf = hparams, exp_conf
        self._per_slot_batch_size, self._global_batch_size = _batch_sizes(hparams, self.distributed.size)
        self._trial_seed = trial_seed
        self._aggregation_frequency = aggregation_frequency
        self._steps_completed = steps_completed
        self._managed_training = managed_training
        self.device = device if device is not None else self._default_device()
        self.models: list[torch.nn.Module] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self.lr_schedulers: list[LRScheduler] = []
        self._optimizer_average: dict[int, bool] = {}
        self._average_aggregated_gradients_default = True
        self._fp16_compression_default = False
        self._scaler: torch.amp.GradScaler | None = None
        self._epoch_len: int | None = None
        self._current_batch_idx: int | None = None
        self._stop_requested = False
        self._enable_tensorboard_logging = enable_tensorboard_logging
        self._tb_writer: SummaryWriter | None = None
        self._to_device_warned: set[type] = set()
        self.experimental = _Experimental(self)
        self.profiler: None = None  # Determined's profiler hook: there is no profiler in this release

    def _default_device(self) -> torch.device:
        if not torch.cuda.is_available():
            return torch.device("cpu")
        device = torch.device("cuda", self.distributed.local_rank)
        torch.cuda.set_device(device)
        return device

    # -- wrapping -----------------------------------------------------------------------------
    def wrap_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """Move the model to this trial's device (and wrap it in DDP with several ranks); returns what to use."""
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"wrap_model() takes a torch.nn.Module, got {type(model).__name__}")
        if self._managed_training:
            model = model.to(self.device)
            if self.distributed.size > 1:
                model = self._ddp(model)
        if self.experimental._auto_amp:
            model = self.autocast_forward_pass(model)
        self.models.append(model)
        return model

    def _ddp(self, model: torch.nn.Module) -> torch.nn.Module:
        import torch.distributed as dist

        if not dist.is_initialized():
            raise RuntimeError("a trial with several ranks needs torch.distributed initialised before wrap_model()")
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        return _PassThroughDDP(model, device_ids=device_ids)

    def wrap_optimizer(self, optimizer: _Optimizer, backward_passes_per_step: int = 1,
                       fp16_compression: bool | None = None,
                       average_aggregated_gradients: bool | None = None) -> _Optimizer:
        """Register an optimizer for checkpointing and gradient aggregation; returns it unchanged."""
        if backward_passes_per_step < 1:
            raise ValueError(f"backward_passes_per_step must be >= 1, got {backward_passes_per_step}")
        if average_aggregated_gradients is None:
            average_aggregated_gradients = self._average_aggregated_gradients_default
        self._optimizer_average[id(optimizer)] = bool(average_aggregated_gradients)
        self.optimizers.append(optimizer)
        return optimizer

    def wrap_lr_scheduler(self, lr_scheduler: _Scheduler, step_mode: LRScheduler.StepMode,
                          frequency: int = 1) -> _Scheduler:
        """Register a scheduler the Trainer steps per `step_mode` (and checkpoints); returns it unchanged."""
        if isinstance(lr_scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau) and \
                step_mode is not LRScheduler.StepMode.MANUAL_STEP:
            raise ValueError("ReduceLROnPlateau needs a metric to step: wrap it with step_mode=MANUAL_STEP "
                             "and step it yourself, e.g. from a callback's on_validation_end")
        opt = getattr(lr_scheduler, "optimizer", None)
        if opt is not None and all(opt is not o for o in self.optimizers):
            raise ValueError("the LR scheduler's optimizer must be one returned by wrap_optimizer()")
        self.lr_schedulers.append(LRScheduler(lr_scheduler, step_mode, frequency))
        return lr_scheduler

    def wrap_scaler(self, scaler: _Scaler) -> _Scaler:
        """Register a torch.amp.GradScaler for checkpointing; pass it to step_optimizer(scaler=...)."""
        if self._scaler is not None:
            raise RuntimeError("wrap_scaler() (or experimental.use_amp()) may be called only once")
        self._scaler = scaler
        return scaler

    def wrap_reducer(self, reducer: Callable[[list[Any]], Any] | MetricReducer, name: str | None = None,
                     for_training: bool = True, for_validation: bool = True) -> MetricReducer:
        """Register a custom metric reducer; its metrics join the training/validation metrics."""
        return self._reducers.wrap_reducer(reducer, name, for_training, for_validation)

    def reset_reducers(self) -> None:
        self._reducers.reset_reducers()

    def reduce_metrics(self, for_training: bool) -> dict[str, Any]:
        return self._reducers.reduce_metrics(for_training)

    def autocast_forward_pass(self, model: torch.nn.Module) -> torch.nn.Module:
        """A module that runs `model` under torch.autocast and returns float32 instead of float16 outputs."""
        return _AutocastModule(model, self.device.type)

    # -- the training step ----------------------------------------------------------------------
    def _should_communicate_and_update(self) -> bool:
        if not self._managed_training:
            return True
        if self._current_batch_idx is None:
            raise RuntimeError("training has not started")
        return (self._current_batch_idx + 1) % self._aggregation_frequency == 0

    def backward(self, loss: torch.Tensor, gradient: torch.Tensor | None = None, retain_graph: bool = False,
                 create_graph: bool = False) -> None:
        """loss.backward(), with the scaler under use_amp and without a DDP all-reduce between aggregated batches."""
        if self._scaler is not None and self.experimental._auto_amp:
            loss = self._scaler.scale(loss)
        skip_sync = (self.distributed.size > 1 and self._aggregation_frequency > 1
                     and not self._should_communicate_and_update())
        with self._no_sync() if skip_sync else contextlib.nullcontext():
            # torch's Tensor.backward() has no annotations: no-untyped-call (reported only under --strict)
            loss.backward(gradient=gradient, retain_graph=retain_graph,  # type: ignore[no-untyped-call, unused-ignore]
                          create_graph=create_graph)

    @contextlib.contextmanager
    def _no_sync(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for model in self.models:
                # Module.__getattr__ is typed as returning a Tensor or Module; DDP's no_sync is a method.
                no_sync = getattr(model, "no_sync", None)
                if no_sync is not None:
                    stack.enter_context(no_sync())
            yield

    def step_optimizer(self, optimizer: torch.optim.Optimizer,
                       clip_grads: Callable[[list[torch.Tensor]], object] | None = None,
                       auto_zero_grads: bool = True, scaler: torch.amp.GradScaler | None = None) -> None:
        """optimizer.step() (on the last batch of each aggregation window), clipping and zeroing as asked."""
        aggregation = self._aggregation_frequency
        if aggregation > 1:
            if not auto_zero_grads:
                raise ValueError("with aggregation_frequency > 1, auto_zero_grads must be True")
            if not self._should_communicate_and_update():
                return
        if scaler is None and self.experimental._auto_amp:
            scaler = self._scaler
        if clip_grads is not None or (aggregation > 1 and self._optimizer_average.get(id(optimizer), True)):
            params: list[torch.Tensor] = [p for group in optimizer.param_groups for p in group["params"]]
            if aggregation > 1 and self._optimizer_average.get(id(optimizer), True):
                for p in params:
                    if p.grad is not None:
                        p.grad.div_(aggregation)
            if clip_grads is not None:
                if scaler is not None and self.experimental._auto_amp:
                    scaler.unscale_(optimizer)
                clip_grads(params)
        if scaler is not None:
            scaler.step(optimizer)
        else:
            optimizer.step()
        if auto_zero_grads:
            optimizer.zero_grad()

    def to_device(self, data: Any) -> Any:
        """Move tensors (and numpy arrays) in `data` to this trial's device.

        `data` is a user's batch of any structure (Any: Determined's signature leaves it untyped too).
        """
        if self.device.type == "cpu" and is_on_cpu_already(data):
            return data
        return to_device(data, self.device, self._to_device_warned)

    # -- trial information ------------------------------------------------------------------------
    def get_hparams(self) -> dict[str, Any]:
        if self._hparams is None:
            raise ValueError("no hyperparameters: pass hparams= to stalwart.pytorch.init()")
        return self._hparams

    def get_hparam(self, name: str) -> Any:
        hparams = self.get_hparams()
        if name not in hparams:
            raise ValueError(f"hyperparameter {name!r} is not in this trial's hyperparameters "
                             f"({', '.join(sorted(hparams)) or 'none'})")
        return hparams[name]

    def get_global_batch_size(self) -> int:
        if self._global_batch_size is None:
            raise ValueError("global_batch_size is not among the hyperparameters")
        return self._global_batch_size

    def get_per_slot_batch_size(self) -> int:
        if self._per_slot_batch_size is None:
            raise ValueError("global_batch_size is not among the hyperparameters")
        return self._per_slot_batch_size

    def get_experiment_config(self) -> dict[str, Any]:
        if self._exp_conf is None:
            raise ValueError("no experiment config: pass exp_conf= to stalwart.pytorch.init()")
        return self._exp_conf

    def get_data_config(self) -> dict[str, Any]:
        return self.get_experiment_config().get("data") or {}

    def _trial_info(self) -> TrialInfo | None:
        info = self._core.info if self._core is not None else None
        return info.trial if info is not None else None

    def get_experiment_id(self) -> int:
        trial = self._trial_info()
        return int(trial.experiment_id) if trial is not None else 0

    def get_trial_id(self) -> int:
        trial = self._trial_info()
        return int(trial.trial_id) if trial is not None else 0

    def get_trial_seed(self) -> int:
        if self._trial_seed is None:
            raise ValueError("this trial has no seed")
        return self._trial_seed

    def get_initial_batch(self) -> int:
        return self._steps_completed

    def get_enable_tensorboard_logging(self) -> bool:
        return self._enable_tensorboard_logging

    def set_enable_tensorboard_logging(self, enable_tensorboard_logging: bool) -> None:
        if not isinstance(enable_tensorboard_logging, bool):
            raise TypeError("enable_tensorboard_logging must be a bool")
        self._enable_tensorboard_logging = enable_tensorboard_logging

    # -- progress ----------------------------------------------------------------------------------
    def _batch_idx(self) -> int:
        if self._current_batch_idx is None:
            raise RuntimeError("training has not started")
        return self._current_batch_idx

    def _epoch_length(self) -> int:
        if self._epoch_len is None:
            raise RuntimeError("the training DataLoader is not built yet")
        return self._epoch_len

    def current_train_batch(self) -> int:
        return self._batch_idx()

    def current_train_epoch(self) -> int:
        return self._batch_idx() // self._epoch_length()

    def is_epoch_start(self) -> bool:
        return self._batch_idx() % self._epoch_length() == 0

    def is_epoch_end(self) -> bool:
        return self._batch_idx() % self._epoch_length() == self._epoch_length() - 1

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask the Trainer to end training cleanly after this batch (it reports, checkpoints, returns).

        With several workers, any worker may ask; all stop together at the next reporting,
        validation or checkpoint boundary.
        """
        if not isinstance(stop_requested, bool):
            raise TypeError("stop_requested must be a bool")
        if stop_requested:
            log.info("stop requested: training ends after this batch")
        self._stop_requested = stop_requested

    # -- tensorboard -------------------------------------------------------------------------------
    def get_tensorboard_path(self) -> pathlib.Path:
        if self._core is None:
            raise RuntimeError("this context has no Core API context (it was built to load a checkpoint)")
        return self._core.train.get_tensorboard_path()

    def get_tensorboard_writer(self) -> SummaryWriter:
        """A torch.utils.tensorboard.SummaryWriter writing to get_tensorboard_path()."""
        if self._tb_writer is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as err:
                raise RuntimeError("get_tensorboard_writer() needs the tensorboard package "
                                   "(pip install tensorboard)") from err
            self._tb_writer = SummaryWriter(str(self.get_tensorboard_path()))
        return self._tb_writer

    def _close(self) -> None:
        if self._tb_writer is not None:
            self._tb_writer.close()
            self._tb_writer = None


class _PassThroughDDP(torch.nn.parallel.DistributedDataParallel):
    """DDP whose attributes it lacks are the user's module's (`self.model.my_attr`, `self.model.my_method()`),
    as Determined 0.38.1's PyTorchTrialContext._PyTorchDistributedDataParallel does."""

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


class _AutocastModule(torch.nn.Module):
    """Runs the wrapped module under torch.autocast; float16/bfloat16 tensor outputs come back as float32.

    Attributes it lacks are the wrapped module's, as with Determined's autocast_forward_pass() wrapper.
    """

    def __init__(self, module: torch.nn.Module, device_type: str) -> None:
        super().__init__()
        self.module = module
        self._device_type = device_type

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        with torch.autocast(self._device_type):
            out = self.module(*args, **kwargs)
        return _to_float(out)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        return self.module.load_state_dict(state_dict, strict=strict, assign=assign)


def _to_float(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out.float() if out.dtype in (torch.float16, torch.bfloat16) else out
    if isinstance(out, dict):
        return {k: _to_float(v) for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return type(out)(_to_float(v) for v in out)
    return out
