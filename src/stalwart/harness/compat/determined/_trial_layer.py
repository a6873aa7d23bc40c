"""Determined's legacy trial layer (0.37/0.38 `_trial_context.py`, `_trial.py`, `_trial_controller.py`):
`det.TrialContext`, `det.LegacyTrial`, `det.TrialController` and `det._DistributedBackend`.

A `LegacyTrial` subclass names its controller with `trial_controller_class` and its context with
`trial_context_class`; `determined.exec.harness` builds both and calls the controller's `run()`, which
consumes the workloads of `determined.layers.make_compatibility_workloads`.
"""

from __future__ import annotations

import abc
import logging
import os
import pathlib
from typing import TYPE_CHECKING, Any

from . import workload
from ._env_context import EnvContext

if TYPE_CHECKING:
    from stalwart.harness.core import Context

log = logging.getLogger("determined")


class TrialContext:
    """The system-provided API of a legacy Trial: config, hyperparameters, ids, stop requests."""

    def __init__(self, core_context: Context, env: EnvContext) -> None:
        self._core = core_context
        self.env = env
        self.distributed = core_context.distributed
        self._stop_requested = False

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> TrialContext:
        """A context for debugging a Trial class outside a cluster: nothing is reported, checkpoints go to /tmp."""
        from ._local_execution import make_local_execution_env

        core_context, env = make_local_execution_env(config)
        return cls(core_context, env)

    def get_experiment_config(self) -> dict[str, Any]:
        return self.env.experiment_config

    def get_data_config(self) -> dict[str, Any]:
        data = self.get_experiment_config().get("data")
        return data if isinstance(data, dict) else {}

    def get_experiment_id(self) -> int:
        return int(self.env.det_experiment_id)

    def get_trial_id(self) -> int:
        return int(self.env.det_trial_id)

    def get_trial_seed(self) -> int:
        return self.env.trial_seed

    def get_hparams(self) -> dict[str, Any]:
        return self.env.hparams

    def get_hparam(self, name: str) -> Any:
        if name not in self.env.hparams:
            raise ValueError(f"Could not find name '{name}' in experiment hyperparameters. Please check your "
                             "experiment configuration 'hyperparameters' section.")
        if name == "global_batch_size":
            log.warning("Please use `context.get_per_slot_batch_size()` and `context.get_global_batch_size()` "
                        "instead of accessing `global_batch_size` directly.")
        return self.env.hparams[name]

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask to stop the trial: the current step ends, a checkpoint is taken, and the trial exits."""
        if not isinstance(stop_requested, bool):
            raise TypeError(f"stop_requested must be a boolean, got {type(stop_requested).__name__}")
        log.info("A trial stoppage has been requested. The trial will be stopped at the end of the current step.")
        self._stop_requested = stop_requested

    def get_initial_batch(self) -> int:
        return self.env.steps_completed

    def get_tensorboard_path(self) -> pathlib.Path:
        return self._core.train.get_tensorboard_path()


class _DistributedBackend:
    """Which distributed training backend the launcher set up, read from the environment it sets."""

    HOROVOD = "USE_HOROVOD"
    DEEPSPEED = "USE_DEEPSPEED"
    TORCH = "USE_TORCH_DISTRIBUTED"

    def use_horovod(self) -> bool:
        return bool(os.environ.get(self.HOROVOD))

    def use_torch(self) -> bool:
        return bool(os.environ.get(self.TORCH))

    def use_deepspeed(self) -> bool:
        return bool(os.environ.get(self.DEEPSPEED))


class TrialController(metaclass=abc.ABCMeta):
    """The legacy Determined-owned loop around a user's Trial; subclasses consume `workloads` in `run()`."""

    def __init__(self, context: Any, env: EnvContext, workloads: workload.Stream | None = None) -> None:
        self.context = context
        self.env = env
        self.workloads = workloads  # None on a cluster: the controller makes them (make_compatibility_workloads)
        backend = _DistributedBackend()
        self.use_horovod = backend.use_horovod()
        self.use_torch = backend.use_torch()
        self.scheduling_unit = env.experiment_config.scheduling_unit()
        self.profiling_enabled = env.experiment_config.profiling_enabled()
        self.is_chief = context.distributed.rank == 0
        if context.distributed.size > 1 and not self.is_chief:
            quiet = logging.DEBUG if env.experiment_config.debug_enabled() else logging.WARNING
            logging.getLogger().setLevel(quiet)

    @classmethod
    @abc.abstractmethod
    def pre_execute_hook(cls, env: EnvContext, distributed_backend: _DistributedBackend) -> Any:
        """Set up what must exist before the Trial is built (the distributed framework, random seeds)."""

    @classmethod
    @abc.abstractmethod
    def from_trial(cls, trial_inst: LegacyTrial, context: TrialContext, env: EnvContext,
                   workloads: workload.Stream | None = None) -> TrialController:
        """The controller for an instantiated Trial."""

    @abc.abstractmethod
    def run(self) -> None:
        """The main loop: do each workload and answer its response function."""

    @classmethod
    def supports_mixed_precision(cls) -> bool:
        return False

    def close(self) -> None:
        self.context.close()

    def upload_tb_files(self) -> None:
        """Send the TensorBoard files written since the last call to storage (workers: all but event files)."""
        from .tensorboard import util as tb_util

        self.context._core.train.upload_tensorboard_files(
            (lambda _: True) if self.is_chief else (lambda p: not p.match("*tfevents*")),
            tb_util.get_rank_aware_path)


class LegacyTrial(metaclass=abc.ABCMeta):
    """A collection of user hooks that its `trial_controller_class` calls; subclass it per framework."""

    trial_controller_class: type[TrialController] | None = None
    trial_context_class: type[TrialContext] = TrialContext

    @abc.abstractmethod
    def __init__(self, context: TrialContext) -> None:
        """Build the trial's state; keep `context` to use it in the other hooks."""
