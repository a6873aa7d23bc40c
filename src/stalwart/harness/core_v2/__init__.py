"""core_v2 (`determined.experimental.core_v2`): the Core API as one module-wide context, and detached mode.

Inside a managed trial, `init()` is `core.init()` with its sub-contexts kept here (`core_v2.train`, `.checkpoint`,
...) and `close()` closes it; the `config` it is given is ignored (the experiment's config rules). Anywhere else (a
laptop, a notebook, another scheduler's job) `init(config=Config(...))` makes a detached experiment on the master
the SDK logs in to (DET_MASTER / STALWART_MASTER, its user's session: docs/detached.md), or finds it again by
`external_experiment_id` / `external_trial_id` and resumes that trial from its latest checkpoint. Its metrics,
checkpoints and printed lines then appear as any trial's; `close()` (or the script's normal end) completes it, an
exception or a non-zero exit ends it in ERROR, and a script killed outright is ended in ERROR by the master after
its heartbeat timeout.
"""

from __future__ import annotations

import atexit
from types import TracebackType
from typing import Any

from stalwart.harness.core import (
    CheckpointContext,
    Context,
    DistributedContext,
    PreemptContext,
    PreemptMode,
    SearcherContext,
    TensorboardMode,
    TrainContext,
)
from stalwart.harness.core._context import CheckpointStorage, init_for_trial
from stalwart.harness.core_v2._config import Config, DefaultConfig, UnmanagedConfig, merge_config, storage_config
from stalwart.harness.core_v2._detached import DetachedRunKeeper, start
from stalwart.harness.errors import InvalidHP
from stalwart.harness.info import ClusterInfo, get_cluster_info

__all__ = ["Config", "DefaultConfig", "DistributedContext", "PreemptMode", "TensorboardMode", "UnmanagedConfig",
           "checkpoint", "close", "distributed", "info", "init", "init_context", "preempt", "searcher", "train",
           "url_reverse_webui_exp_view"]

# the module-wide sub-contexts of the last init() (None before it and after close())
train: TrainContext | None = None
checkpoint: CheckpointContext | None = None
distributed: DistributedContext | None = None
preempt: PreemptContext | None = None
searcher: SearcherContext | None = None
info: ClusterInfo | None = None

_context: Context | None = None
_master_url: str | None = None
_atexit_registered = False


class DetachedContext(Context):
    """A detached run's Context: closing it ends the run (ERROR when the with-block raised)."""

    def __init__(self, ctx: Context, keeper: DetachedRunKeeper) -> None:
        super().__init__(distributed=ctx.distributed, train=ctx.train, checkpoint=ctx.checkpoint,
                         preempt=ctx.preempt, searcher=ctx.searcher, info=ctx.info)
        self._keeper = keeper
        self._failure: BaseException | None = None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if exc is not None and not isinstance(exc, InvalidHP):
            self._failure = exc
        return super().__exit__(exc_type, exc, tb)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._keeper.end(self._failure)


def init_context(*, config: Config | None = None, defaults: DefaultConfig | None = None,
                 unmanaged: UnmanagedConfig | None = None, client: Any = None,
                 distributed: DistributedContext | None = None, checkpoint_storage: CheckpointStorage = None,
                 preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
                 tensorboard_mode: TensorboardMode = TensorboardMode.AUTO) -> Context:
    """A Context, for `with core_v2.init_context(config=...) as ctx:` (the run ends with the block)."""
    return _make_context(merge_config(config, defaults, unmanaged, get_cluster_info() is not None), client,
                         distributed, checkpoint_storage, preempt_mode, tensorboard_mode)


def _make_context(config: Config | None, client: Any, dist: DistributedContext | None,
                  checkpoint_storage: CheckpointStorage, preempt_mode: PreemptMode,
                  tensorboard_mode: TensorboardMode) -> Context:
    global _master_url
    managed = get_cluster_info()
    if managed is not None and managed.trial is not None:
        _master_url = managed.master_url
        return init_for_trial(managed, distributed=dist, checkpoint_storage=checkpoint_storage,
                              preempt_mode=preempt_mode, tensorboard_mode=tensorboard_mode)
    if config is None:
        raise ValueError("core_v2.init outside a managed trial needs config=core_v2.Config(name=..., ...)")
    from stalwart.experimental._stalwart import Stalwart  # the SDK's login (only a detached script needs it)

    sdk = client if client is not None else Stalwart()
    dist = dist or DistributedContext()
    storage = storage_config(checkpoint_storage if isinstance(checkpoint_storage, (str, dict))
                             else config.checkpoint_storage)
    run_info, heartbeat_timeout = start(sdk._client, sdk.master, config, storage, dist)
    _master_url = sdk.master
    keeper = DetachedRunKeeper(run_info, dist.rank == 0, heartbeat_timeout)
    try:
        ctx = init_for_trial(run_info, distributed=dist, checkpoint_storage=storage, preempt_mode=preempt_mode,
                             tensorboard_mode=tensorboard_mode)
    except BaseException as err:
        keeper.end(err)
        raise
    return DetachedContext(ctx, keeper)


def init(*, config: Config | None = None, defaults: DefaultConfig | None = None,
         unmanaged: UnmanagedConfig | None = None, client: Any = None, distributed: DistributedContext | None = None,
         checkpoint_storage: CheckpointStorage = None, preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
         tensorboard_mode: TensorboardMode = TensorboardMode.AUTO) -> None:
    """Set up this module's sub-contexts (`core_v2.train.report_training_metrics(...)`); a second call closes the
    first. The script's end closes them too."""
    global _context, _atexit_registered
    if _context is not None:
        close()
    _context = _make_context(merge_config(config, defaults, unmanaged, get_cluster_info() is not None), client,
                             distributed, checkpoint_storage, preempt_mode, tensorboard_mode)
    _set_globals(_context)
    if not _atexit_registered:
        atexit.register(close)
        _atexit_registered = True


def _set_globals(ctx: Context | None) -> None:
    global train, checkpoint, distributed, preempt, searcher, info
    train = ctx.train if ctx else None
    checkpoint = ctx.checkpoint if ctx else None
    distributed = ctx.distributed if ctx else None
    preempt = ctx.preempt if ctx else None
    searcher = ctx.searcher if ctx else None
    info = ctx.info if ctx else None


def close() -> None:
    """Close what init() set up: a detached run ends COMPLETED (ERROR when the script is failing)."""
    global _context
    ctx, _context = _context, None
    _set_globals(None)
    if ctx is not None:
        ctx.close()


def url_reverse_webui_exp_view() -> str:
    """The web UI's page of this trial's experiment."""
    if info is None or info.trial is None or _master_url is None:
        raise RuntimeError("core_v2.url_reverse_webui_exp_view: call core_v2.init() first")
    return f"{_master_url.rstrip('/')}/experiments/{info.trial.experiment_id}"
