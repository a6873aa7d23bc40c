"""`determined.tensorboard`: where a trial's TensorBoard files go, and Determined's metric writers.

`get_base_path({})` inside a trial is the trial's TensorBoard directory, the one Stalwart writes in place
(shared_fs, directory) or syncs to the object store, so files user code writes there reach TensorBoard
(Determined's is `/tmp/tensorboard-<allocation>-<rank>`, synced by its own manager). With a
`base_path` key, or outside a trial, the path is Determined's. Stalwart syncs TensorBoard files itself:
`build` and the storage managers are not provided.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any, NoReturn

from stalwart.harness.core._context import trial_tensorboard_dir

from . import util
from .metric_writers import BatchMetricWriter, MetricWriter

_MANAGERS = {"TensorboardManager", "S3TensorboardManager", "SharedFSTensorboardManager", "AzureTensorboardManager",
             "GCSTensorboardManager", "DirectoryTensorboardManager"}


def get_experiment_sync_path(cluster_id: str, experiment_id: str) -> pathlib.Path:
    """`<cluster_id>/tensorboard/experiment/<experiment_id>`, relative to the storage root."""
    return pathlib.Path(cluster_id, "tensorboard", "experiment", experiment_id)


def get_sync_path(cluster_id: str, experiment_id: str, trial_id: str) -> pathlib.Path:
    """`<cluster_id>/tensorboard/experiment/<experiment_id>/trial/<trial_id>`."""
    return get_experiment_sync_path(cluster_id, experiment_id) / "trial" / trial_id


def get_rank_if_horovod_process_else_return_zero() -> int | None:
    return int(os.getenv("HOROVOD_RANK", 0))


def get_base_path(checkpoint_config: dict[str, Any]) -> pathlib.Path:
    """The directory to write TensorBoard files into (see the module's docstring for where it is)."""
    if not checkpoint_config.get("base_path"):
        in_trial = trial_tensorboard_dir()
        if in_trial is not None:
            return in_trial
    root = pathlib.Path(checkpoint_config["base_path"]) if checkpoint_config.get("base_path") else pathlib.Path("/tmp")
    allocation = os.environ.get("DET_ALLOCATION_ID", "")
    return root / f"tensorboard-{allocation}-{get_rank_if_horovod_process_else_return_zero()}"


def get_metric_writer() -> BatchMetricWriter:
    """A BatchMetricWriter writing event files into `get_base_path({})` (needs neither TensorFlow nor torch)."""
    from .metric_writers.events import EventFileWriter

    return BatchMetricWriter(EventFileWriter(get_base_path({})))


def build(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise NotImplementedError(
        "determined.tensorboard.build() makes Determined's TensorBoard upload manager; Stalwart syncs a trial's "
        "TensorBoard files itself: write them into core_context.train.get_tensorboard_path() "
        "(or determined.tensorboard.get_base_path({}))"
    )


def __getattr__(name: str) -> Any:
    if name in _MANAGERS:
        raise AttributeError(
            f"determined.tensorboard.{name} is Determined's TensorBoard upload manager, which Stalwart does not "
            "provide: it syncs the files in core_context.train.get_tensorboard_path() itself"
        )
    raise AttributeError(f"module 'determined.tensorboard' (Stalwart's implementation) has no attribute '{name}'")


__all__ = ["BatchMetricWriter", "MetricWriter", "build", "get_base_path", "get_experiment_sync_path",
           "get_metric_writer", "get_sync_path", "util"]
