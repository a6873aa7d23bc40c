"""The Core API (Determined's signatures): init() returns a Context with train, checkpoint, preempt, searcher,
distributed."""

from stalwart.harness.core._checkpoint import CheckpointContext, DownloadMode
from stalwart.harness.core._context import CheckpointStorage, Context, init
from stalwart.harness.core._distributed import DistributedContext
from stalwart.harness.core._preempt import PreemptContext, PreemptMode
from stalwart.harness.core._searcher import SearcherContext, SearcherMode, SearcherOperation, Unit
from stalwart.harness.core._train import EarlyExitReason, TensorboardMode, TrainContext

__all__ = [
    "CheckpointContext",
    "CheckpointStorage",
    "Context",
    "DistributedContext",
    "DownloadMode",
    "EarlyExitReason",
    "PreemptContext",
    "PreemptMode",
    "SearcherContext",
    "SearcherMode",
    "SearcherOperation",
    "TensorboardMode",
    "TrainContext",
    "Unit",
    "init",
]
