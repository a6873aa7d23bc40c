"""The kind and value of the metrics a real PyTorchTrial reports, for every kind of value its batches return.

Mirrors Determined 0.38.1: harness/determined/pytorch/_reducer.py (`_simple_reduce_metrics`: np.average / np.sum /
np.max / np.min over all the elements of the stacked per-batch values, so one number whatever their shape),
harness/determined/pytorch/_metric_utils.py (`_reduce_metrics`, `_convert_metrics_to_numpy`: evaluate_full_dataset()
values are only turned into numpy arrays) and harness/determined/util.py (`make_metrics`: the training average is
np.mean over all elements, None left out, as a Python number; None for values that cannot be averaged).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from stalwart import pytorch

# Per-batch metric values for the batch of index i (0, 1, 2): every kind a trial may return.
KINDS = {
    "python_float": lambda i: float(i + 1),
    "python_int": lambda i: i + 1,
    "tensor_0d": lambda i: torch.tensor(float(i + 1)),
    "numpy_scalar": lambda i: np.float64(i + 1),
    "tensor_1x": lambda i: torch.tensor([float(i + 1)]),
    "numpy_1x": lambda i: np.array([float(i + 1)]),
    "tensor_3x": lambda i: torch.tensor([float(i + 1), 10.0 * (i + 1), 100.0 * (i + 1)]),
    "numpy_2x2": lambda i: np.full((2, 2), float(i + 1)),
}
# Over the batches 0..2: the values are 1, 2, 3 for the scalars and one-element arrays; the 3-element tensor holds
# 1,10,100 / 2,20,200 / 3,30,300 and the 2x2 array four copies of 1 / 2 / 3, all reduced over every element.
EXPECTED = {
    pytorch.Reducer.AVG: {"python_float": 2.0, "python_int": 2.0, "tensor_0d": 2.0, "numpy_scalar": 2.0,
                          "tensor_1x": 2.0, "numpy_1x": 2.0, "tensor_3x": 74.0, "numpy_2x2": 2.0},
    pytorch.Reducer.SUM: {"python_float": 6.0, "python_int": 6, "tensor_0d": 6.0, "numpy_scalar": 6.0,
                          "tensor_1x": 6.0, "numpy_1x": 6.0, "tensor_3x": 666.0, "numpy_2x2": 24.0},
    pytorch.Reducer.MAX: {"python_float": 3.0, "python_int": 3, "tensor_0d": 3.0, "numpy_scalar": 3.0,
                          "tensor_1x": 3.0, "numpy_1x": 3.0, "tensor_3x": 300.0, "numpy_2x2": 3.0},
    pytorch.Reducer.MIN: {"python_float": 1.0, "python_int": 1, "tensor_0d": 1.0, "numpy_scalar": 1.0,
                          "tensor_1x": 1.0, "numpy_1x": 1.0, "tensor_3x": 1.0, "numpy_2x2": 1.0},
}


class _KindsBase(pytorch.PyTorchTrial):
    """Three training and three validation batches of one record; every metric kind in each training batch."""

    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.model = context.wrap_model(nn.Linear(1, 1))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.01))

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(torch.utils.data.TensorDataset(torch.ones(3, 1)), batch_size=1)

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(torch.utils.data.TensorDataset(torch.ones(3, 1)), batch_size=1)

    def train_batch(self, batch, epoch_idx: int, batch_idx: int):
        loss = self.model(batch[0]).sum()
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {name: make(batch_idx) for name, make in KINDS.items()}


class KindsTrial(_KindsBase):
    """Every metric kind in each validation batch too, reduced by hparams['reducer']."""

    def evaluate_batch(self, batch, batch_idx: int):
        return {name: make(batch_idx) for name, make in KINDS.items()}

    def evaluation_reducer(self):
        return pytorch.Reducer[self.context.get_hparam("reducer")]


def _fit(tmp_path, trial_cls=KindsTrial, reducer: str = "AVG") -> list[tuple[str, dict]]:
    reports: list[tuple[str, dict]] = []
    with pytorch.init(hparams={"global_batch_size": 1, "reducer": reducer}, checkpoint_storage=str(tmp_path)) as ctx:
        train = ctx._core.train
        train.report_training_metrics = lambda s, m, batch_metrics=None: reports.append(("training", m))
        train.report_validation_metrics = lambda s, m: reports.append(("validation", m))
        pytorch.Trainer(trial_cls(ctx), ctx).fit(max_length=pytorch.Batch(3), validation_period=pytorch.Batch(3),
                                                 reporting_period=pytorch.Batch(3))
    return reports


def _only(reports: list[tuple[str, dict]], group: str) -> dict:
    found = [m for g, m in reports if g == group]
    assert len(found) == 1, reports
    return {k: v for k, v in found[0].items() if k not in ("batches", "epochs")}


@pytest.mark.parametrize("reducer", ["AVG", "SUM", "MAX", "MIN"])
def test_evaluate_batch_metrics_reduce_to_one_number_of_every_element(tmp_path, reducer):
    # Determined: _reduce_metrics -> _simple_reduce_metrics(reducer, np.stack(values)) with no axis.
    validation = _only(_fit(tmp_path, reducer=reducer), "validation")
    expected = EXPECTED[pytorch.Reducer[reducer]]
    assert validation == expected
    assert {k: type(v) for k, v in validation.items()} == {k: type(v) for k, v in expected.items()}


def test_training_average_is_one_python_number_per_metric(tmp_path):
    # Determined: util.make_metrics -> np.mean(all elements).item(), for scalars and arrays alike.
    training = _only(_fit(tmp_path), "training")
    assert training == EXPECTED[pytorch.Reducer.AVG]
    assert all(type(v) is float for v in training.values())


class OddTrainingMetricsTrial(KindsTrial):
    """Training values that make_metrics cannot average (None for them), or that hold a None (left out)."""

    def train_batch(self, batch, epoch_idx: int, batch_idx: int):
        super().train_batch(batch, epoch_idx, batch_idx)
        return {"ragged": np.ones(batch_idx + 1), "text": "x", "some_none": None if batch_idx == 1 else 4.0,
                "loss": torch.tensor(0.5, dtype=torch.float32)}


def test_training_values_that_cannot_be_averaged_report_none(tmp_path):
    # Determined: util.make_metrics catches TypeError/ValueError and keeps the name with the value None.
    training = _only(_fit(tmp_path, OddTrainingMetricsTrial), "training")
    assert training == {"ragged": None, "text": None, "some_none": 4.0, "loss": 0.5}


class FullDatasetKindsTrial(_KindsBase):
    def evaluate_full_dataset(self, data_loader):
        return {name: make(0) for name, make in KINDS.items()}


def test_evaluate_full_dataset_values_keep_their_shape(tmp_path):
    # Determined: _convert_metrics_to_numpy (tensor -> ndarray), then json_encode's ndarray.tolist():
    # a 0-d value is a number, a one-element 1-d value stays a one-element list.
    validation = _only(_fit(tmp_path, FullDatasetKindsTrial), "validation")
    assert validation == {"python_float": 1.0, "python_int": 1, "tensor_0d": 1.0, "numpy_scalar": 1.0,
                          "tensor_1x": [1.0], "numpy_1x": [1.0], "tensor_3x": [1.0, 10.0, 100.0],
                          "numpy_2x2": [[1.0, 1.0], [1.0, 1.0]]}
