"""stalwart.pytorch.init() and Trainer: build the trial context on the Core API, resolve fit()'s arguments."""

from __future__ import annotations

import contextlib
import logging
import os
import random
from collections.abc import Iterator, Mapping
from typing import Any, TypedDict

import numpy as np
import torch

from stalwart.config import Length, views
from stalwart.harness import core
from stalwart.harness.info import ClusterInfo, TrialInfo, get_cluster_info
from stalwart.harness.pytorch._context import PyTorchTrialContext
from stalwart.harness.pytorch._controller import FitSettings, TrialController
from stalwart.harness.pytorch._trial import PyTorchTrial
from stalwart.harness.pytorch._units import NEVER, Batch, TrainUnit, from_length

log = logging.getLogger("stalwart.pytorch")

CHECKPOINT_POLICIES = ("best", "all", "none")


class _RunSettings(TypedDict):
    """The FitSettings that depend on where the trial runs (on a cluster or off it)."""

    max_length: TrainUnit
    latest_checkpoint: str | None
    trial_id: int
    searcher_metric: str | None
    smaller_is_better: bool


def _set_random_seeds(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.random.manual_seed(seed)


def _distributed_from_env() -> core.DistributedContext | None:
    """Under torchrun (WORLD_SIZE > 1): initialise torch.distributed (gloo on CPU, nccl on GPU)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    context = core.DistributedContext.from_torch_distributed()
    log.info("worker rank %d of %d (local rank %d of %d, machine %d of %d), torch.distributed backend %s",
             context.rank, context.size, context.local_rank, context.local_size, context.cross_rank,
             context.cross_size, dist.get_backend())
    return context


def _trial_info(info: ClusterInfo | None) -> TrialInfo | None:
    return info.trial if info is not None else None


@contextlib.contextmanager
def init(*, hparams: dict[str, Any] | None = None, exp_conf: dict[str, Any] | None = None,
         distributed: core.DistributedContext | None = None, aggregation_frequency: int = 1,
         enable_tensorboard_logging: bool = True,
         checkpoint_storage: core.CheckpointStorage = None) -> Iterator[PyTorchTrialContext]:
    """`with stalwart.pytorch.init(...) as context:` a PyTorchTrialContext on top of `core.init()`.

    On a cluster, the experiment config, trial seed and (unless given) hyperparameters come from the
    trial; off-cluster, from the arguments. `enable_tensorboard_logging` picks the Core API's
    TensorBoard mode: AUTO writes every reported metric to the trial's TensorBoard files (on a
    cluster), MANUAL leaves them to the trial (`context.get_tensorboard_writer()`).
    `checkpoint_storage` (off-cluster: a directory or a storage config dict) is passed to
    core.init(). Off-cluster with `reproducibility.experiment_seed` in `exp_conf`, the Python, numpy
    and torch RNGs are seeded with it, as a cluster seeds them.
    """
    trial = _trial_info(get_cluster_info())
    if trial is not None:
        hparams = trial.hparams if hparams is None else hparams
        exp_conf, seed, steps = trial._config, int(trial.trial_seed), int(trial.steps_completed)
        _set_random_seeds(seed)
    else:
        steps = 0
        configured_seed = views.experiment_seed(exp_conf) if exp_conf else None
        if configured_seed is not None:
            seed = configured_seed
            _set_random_seeds(seed)
        else:
            seed = random.SystemRandom().getrandbits(31)
    distributed = distributed or _distributed_from_env()
    if trial is None and distributed is not None and distributed.size > 1:
        seed = distributed.broadcast(seed)  # one data order for all workers, or the shards would overlap
    tensorboard_mode = core.TensorboardMode.AUTO if enable_tensorboard_logging else core.TensorboardMode.MANUAL
    with core.init(distributed=distributed, checkpoint_storage=checkpoint_storage,
                   preempt_mode=core.PreemptMode.WorkersAskChief, tensorboard_mode=tensorboard_mode) as core_context:
        context = PyTorchTrialContext(core_context, hparams=hparams, exp_conf=exp_conf, trial_seed=seed,
                                      aggregation_frequency=aggregation_frequency, steps_completed=steps,
                                      enable_tensorboard_logging=enable_tensorboard_logging)
        try:
            yield context
        finally:
            context._close()


class Trainer:
    """Trains a PyTorchTrial: `Trainer(trial, context).fit(max_length=Epoch(5), ...)`."""

    def __init__(self, trial: PyTorchTrial, context: PyTorchTrialContext) -> None:
        self._trial = trial
        self._context = context
        if context._core is None:
            raise ValueError("this context has no Core API context: build it with stalwart.pytorch.init()")
        info = context._core.info
        self._cluster: tuple[ClusterInfo, TrialInfo] | None = \
            (info, info.trial) if info is not None and info.trial is not None else None
        self._on_cluster = self._cluster is not None
        self.checkpoints: list[str] = []

    def fit(self, checkpoint_period: TrainUnit | None = None, validation_period: TrainUnit | None = None,
            max_length: TrainUnit | None = None, reporting_period: TrainUnit = Batch(100),  # noqa: B008
            checkpoint_policy: str = "best", latest_checkpoint: str | None = None, step_zero_validation: bool = False,
            test_mode: bool = False, profiling_enabled: bool = False) -> None:
        """Train to `max_length`, validating, checkpointing and reporting at the given periods.

        Checkpoints after validations follow `checkpoint_policy` (best per searcher.metric / all /
        none); training always ends with a checkpoint. On a cluster, preemption is checked every
        reporting period and ends training with a checkpoint; `latest_checkpoint` defaults to the
        trial's latest checkpoint and `max_length` to the legacy `searcher.max_length`.
        """
        if checkpoint_policy not in CHECKPOINT_POLICIES:
            raise ValueError(f"checkpoint_policy must be one of {CHECKPOINT_POLICIES}, got {checkpoint_policy!r}")
        for name, unit in (("checkpoint_period", checkpoint_period), ("validation_period", validation_period),
                           ("reporting_period", reporting_period), ("max_length", max_length)):
            if unit is not None and not isinstance(unit, TrainUnit):
                raise TypeError(f"{name} must be a Batch or Epoch, got {unit!r}")
        if profiling_enabled:
            log.warning("profiling_enabled: system metrics profiling is not available in this release")
        settings = self._on_cluster_settings(*self._cluster, max_length, latest_checkpoint, test_mode) \
            if self._cluster is not None else self._local_settings(max_length, latest_checkpoint)
        fit_settings = FitSettings(
            **settings,
            validation_period=validation_period or NEVER, checkpoint_period=checkpoint_period or NEVER,
            reporting_period=reporting_period or NEVER, checkpoint_policy=checkpoint_policy,
            step_zero_validation=step_zero_validation, test_mode=test_mode, on_cluster=self._on_cluster,
            data_seed=self._context._trial_seed if self._context._trial_seed is not None else 0,
        )
        controller = TrialController(self._trial, self._context, fit_settings)
        try:
            controller.run()
        finally:
            self.checkpoints.extend(controller.checkpoints)

    def _local_settings(self, max_length: TrainUnit | None, latest_checkpoint: str | None) -> _RunSettings:
        if max_length is None:
            raise ValueError("max_length is required off-cluster, e.g. fit(max_length=Epoch(5))")
        if not isinstance(max_length.value, int):
            raise TypeError("max_length must be Batch(n) or Epoch(n) with an int n")
        conf = self._context._exp_conf or {}
        return {"max_length": max_length, "latest_checkpoint": latest_checkpoint, "trial_id": 0,
                "searcher_metric": views.searcher_metric(conf), "smaller_is_better": views.smaller_is_better(conf)}

    def _on_cluster_settings(self, info: ClusterInfo, trial: TrialInfo, max_length: TrainUnit | None,
                             latest_checkpoint: str | None, test_mode: bool) -> _RunSettings:
        if test_mode:
            raise ValueError("test_mode is for off-cluster runs only")
        config = trial._config
        if max_length is None:
            max_length = legacy_max_length(config, trial.target_length, self._context._global_batch_size)
            log.warning("fit() has no max_length: using the deprecated searcher.max_length (%r)", max_length)
        if latest_checkpoint is None:
            latest_checkpoint = info.latest_checkpoint
        return {"max_length": max_length, "latest_checkpoint": latest_checkpoint, "trial_id": int(trial.trial_id),
                "searcher_metric": views.searcher_metric(config), "smaller_is_better": views.smaller_is_better(config)}


def legacy_max_length(config: Mapping[str, Any], target_length: int | None = None,
                      global_batch_size: int | None = None) -> TrainUnit:
    """`searcher.max_length` (or this trial's searcher target in its unit) as a TrainUnit."""
    length = views.max_length(config)
    if length is None:
        raise ValueError("no training length: pass fit(max_length=...) or set searcher.max_length")
    if target_length is not None:
        length = Length(length.unit, int(target_length))
    unit = from_length(length, global_batch_size or views.global_batch_size(config),
                       records_per_epoch=views.records_per_epoch(config))
    assert unit is not None
    return unit
