"""`TorchWriter` (deprecated in Determined 0.38.1): a torch SummaryWriter on `get_base_path({})`."""

from __future__ import annotations

import warnings
from typing import Any

from torch.utils import tensorboard

from .. import get_base_path
from .callback import MetricWriter


class _TorchWriter(MetricWriter):
    def __init__(self) -> None:
        super().__init__()
        self.writer: Any = tensorboard.SummaryWriter(log_dir=str(get_base_path({})))

    def add_scalar(self, name: str, value: Any, step: int) -> None:
        self.writer.add_scalar(name, value, step)

    def reset(self) -> None:
        self.writer.close()  # flushes and closes: the next write makes a new file

    def flush(self) -> None:
        self.writer.flush()


class TorchWriter(_TorchWriter):
    """`self.writer` is a `torch.utils.tensorboard.SummaryWriter` writing where the trial's TensorBoard files go."""

    def __init__(self) -> None:
        warnings.warn(
            "TorchWriter() has been deprecated and will be removed in a future version. Trials: use "
            "determined.pytorch.PyTorchTrialContext.get_tensorboard_writer(); Core API: a "
            "torch.utils.tensorboard.SummaryWriter on core_context.train.get_tensorboard_path()",
            FutureWarning, stacklevel=2,
        )
        super().__init__()
