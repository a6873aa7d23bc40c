"""Stalwart's Python SDK (Determined's `determined.experimental`): `client` drives experiments and the model
registry from Python.

`client` holds the functions and classes; `metrics_frame` / `metric_rows` turn trial metrics into a pandas
DataFrame or plain rows.
"""

from stalwart.experimental import client
from stalwart.experimental.checkpoint import Checkpoint, CheckpointSortBy, CheckpointState, OrderBy
from stalwart.experimental.experiment import Experiment
from stalwart.experimental.metrics import TrialMetrics, metric_rows, metrics_frame
from stalwart.experimental.model import Model, ModelOrderBy, ModelSortBy, ModelVersion
from stalwart.experimental.trial import Trial, TrialSortBy

TrialOrderBy = OrderBy

__all__ = ["Checkpoint", "CheckpointSortBy", "CheckpointState", "Experiment", "Model", "ModelOrderBy", "ModelSortBy",
           "ModelVersion", "OrderBy", "Trial", "TrialMetrics", "TrialOrderBy", "TrialSortBy", "client", "metric_rows",
           "metrics_frame"]
