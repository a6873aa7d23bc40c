"""core.init(): build the Context for this process, on a cluster or off it (local stand-ins)."""

from __future__ import annotations

import logging
import os
import pathlib
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from stalwart.config import views
from stalwart.harness.core._checkpoint import CheckpointContext
from stalwart.harness.core._distributed import DistributedContext
from stalwart.harness.core._preempt import PreemptContext, PreemptMode
from stalwart.harness.core._searcher import SearcherContext
from stalwart.harness.core._tensorboard_sync import TensorboardSync
from stalwart.harness.core._train import EarlyExitReason, TensorboardMode, TrainContext
from stalwart.harness.errors import InvalidHP
from stalwart.harness.info import ClusterInfo, TrialInfo, get_cluster_info
from stalwart.harness.session import trial_client
from stalwart.storage import SharedFSStorage, StorageManager, make_storage
from stalwart.storage.base import tensorboard_key

log = logging.getLogger("stalwart.core")
_LEVELS = ("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL")  # what core.alert's level may be

# Where checkpoints go off-cluster: a directory, or a storage config (`{"type": "shared_fs", ...}`); on a
# cluster only a storage config replaces the experiment's.
CheckpointStorage = str | os.PathLike[str] | Mapping[str, Any] | None


class Context:
    """Sub-contexts: `distributed`, `train`, `checkpoint`, `preempt`, `searcher`; plus `info` (None off-cluster)."""

    def __init__(self, *, distributed: DistributedContext, train: TrainContext, checkpoint: CheckpointContext,
                 preempt: PreemptContext, searcher: SearcherContext, info: ClusterInfo | None) -> None:
        self.distributed = distributed
        self.train = train
        self.checkpoint = checkpoint
        self.preempt = preempt
        self.searcher = searcher
        self.info = info

    def __enter__(self) -> Context:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        suppress = False
        if exc_type is not None and issubclass(exc_type, InvalidHP):
            log.info("InvalidHP raised: reporting an early exit so the searcher can move on")
            self.train.report_early_exit(EarlyExitReason.INVALID_HP)
            suppress = True
        self.close()
        if exc_type is None or suppress:
            _mark_work_done()
        return suppress

    def close(self) -> None:
        try:
            self.train.close()
        finally:
            self.preempt.close()
            self.distributed.close()

    def alert(self, title: str = "", description: str = "", level: str = "INFO") -> None:
        """Send a CUSTOM webhook event (docs/webhooks.md) to the webhooks of this trial's workspace and of the
        cluster, through the master (the chief's call; off the cluster and on other ranks it is only logged). A
        failure to reach the master is logged, never raised: training goes on."""
        level = str(level or "INFO").upper()
        log.log(logging.getLevelName(level) if level in _LEVELS else logging.INFO, "alert: %s %s", title, description)
        try:
            self.train.send_alert(str(title), str(description), level if level in _LEVELS else "INFO")
        except Exception as err:  # an alert is best effort: the trial keeps training
            log.warning("alert %r was not sent to the master: %s", title, err)


def _mark_work_done() -> None:
    """Tell this worker's wrap_rank that the with-block ended cleanly (see wrap_rank: exit-time aborts)."""
    path = os.environ.get("STALWART_WORKER_DONE_FILE")
    if path:
        try:
            pathlib.Path(path).write_text("done")
        except OSError as err:
            log.debug("cannot write %s: %s", path, err)


def local_checkpoint_dir() -> pathlib.Path:
    """Where checkpoints of a run off the cluster go (`e create --test-mode --local`, a script run by hand) when
    core.init() names no storage: under $STALWART_HOME when it is set (the home of all local state), else under
    $XDG_DATA_HOME (default ~/.local/share)."""
    home = os.environ.get("STALWART_HOME")
    if home:
        return pathlib.Path(home).expanduser() / "local" / "checkpoints"
    base = pathlib.Path(os.environ.get("XDG_DATA_HOME") or pathlib.Path.home() / ".local" / "share")
    return base / "stalwart" / "checkpoints"


def _local_storage(checkpoint_storage: CheckpointStorage) -> StorageManager:
    if checkpoint_storage is None:
        return SharedFSStorage(str(local_checkpoint_dir()))
    if isinstance(checkpoint_storage, (str, os.PathLike)):
        return SharedFSStorage(str(checkpoint_storage))
    return make_storage(dict(checkpoint_storage))


def _tensorboard_dir(storage: StorageManager, trial: TrialInfo) -> pathlib.Path:
    """`<storage root>/tensorboard/experiment/<id>/trial/<id>/` as Determined lays it out, on a file system backend;
    else the same under the work directory, synced to the object store (`_tensorboard_sync`)."""
    root = getattr(storage, "base", None)
    base = pathlib.Path(root) if root is not None else pathlib.Path(os.environ.get("DET_WORKDIR", "."))
    return base / tensorboard_key(trial.experiment_id, trial.trial_id)


def trial_tensorboard_dir() -> pathlib.Path | None:
    """This trial's TensorBoard directory, the one `core.init()`'s `train.get_tensorboard_path()` gives (written in
    place or synced to the object store); None outside a trial. For `determined.tensorboard.get_base_path`."""
    info = get_cluster_info()
    if info is None or info.trial is None:
        return None
    storage = make_storage(dict(info.checkpoint_storage or info.trial._config["checkpoint_storage"]))
    return _tensorboard_dir(storage, info.trial)


def _tensorboard_sync(storage: StorageManager, trial: TrialInfo, chief: bool) -> TensorboardSync | None:
    """The chief's sync of its local TensorBoard files to an object store (None on a file system backend, where
    they are written in place)."""
    if getattr(storage, "base", None) is not None or not chief:
        return None
    return TensorboardSync(_tensorboard_dir(storage, trial), storage, trial.experiment_id, trial.trial_id)


def init(*, distributed: DistributedContext | None = None, checkpoint_storage: CheckpointStorage = None,
         preempt_mode: PreemptMode = PreemptMode.WorkersAskChief, tensorboard_mode: TensorboardMode | None = None,
         async_checkpointing: bool = False) -> Context:
    """The Core API entry point, used as `with core.init() as ctx:`."""
    info = get_cluster_info()
    if info is None or info.trial is None:
        return init_off_cluster(distributed, checkpoint_storage)
    return init_for_trial(info, distributed=distributed, checkpoint_storage=checkpoint_storage,
                          preempt_mode=preempt_mode, tensorboard_mode=tensorboard_mode)


def init_for_trial(info: ClusterInfo, *, distributed: DistributedContext | None = None,
                   checkpoint_storage: CheckpointStorage = None,
                   preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
                   tensorboard_mode: TensorboardMode | None = None) -> Context:
    """The Context of a trial's run that `info` describes: a managed run's (its info file) or a detached script's
    (made by core_v2 from the run the master started for it)."""
    assert info.trial is not None
    config = info.trial._config
    slots = views.slots_per_trial(config)
    if slots > 1 and distributed is None:
        raise RuntimeError(
            f"this trial has slots_per_trial={slots} but core.init() got no distributed context: start the entrypoint "
            "through the launcher (python3 -m determined.launch.torch_distributed python3 train.py) and pass "
            "distributed=core.DistributedContext.from_torch_distributed()"
        )
    dist = distributed or DistributedContext()
    client = trial_client(info)
    chief = dist.rank == 0
    # the info file's storage carries the credentials; the config's shows them hidden
    storage = make_storage(dict(checkpoint_storage) if isinstance(checkpoint_storage, dict)
                           else info.checkpoint_storage or config["checkpoint_storage"])
    length = views.max_length(config)
    return Context(
        distributed=dist,
        train=TrainContext(client if chief else None, info.trial.trial_id, info.trial.trial_run_id,
                           info.trial.experiment_id, tensorboard_path=_tensorboard_dir(storage, info.trial),
                           tensorboard_mode=tensorboard_mode or TensorboardMode.AUTO,
                           tensorboard_sync=_tensorboard_sync(storage, info.trial, chief)),
        checkpoint=CheckpointContext(storage, dist, client, info.trial.trial_id),
        preempt=PreemptContext(client, info.allocation_id, dist, preempt_mode),
        searcher=SearcherContext(client if chief else None, info.trial.trial_id, dist, info.trial.target_length,
                                 length.unit if length else None),
        info=info,
    )


def init_off_cluster(distributed: DistributedContext | None, checkpoint_storage: CheckpointStorage) -> Context:
    """The Context of a run outside any cluster: nothing reported, checkpoints in `checkpoint_storage` (a directory or
    a storage config; None: `local_checkpoint_dir()`)."""
    dist = distributed or DistributedContext()
    storage = _local_storage(checkpoint_storage)
    return Context(
        distributed=dist,
        train=TrainContext(None),
        checkpoint=CheckpointContext(storage, dist),
        preempt=PreemptContext(None, None, dist),
        searcher=SearcherContext(None, None, dist, 1, "batches"),
        info=None,
    )
