"""determined.experimental inside trials: Stalwart's SDK. `from determined.experimental import client` is
`stalwart.experimental.client` itself, and needs no login there: the trial's environment names its master and
holds the trial's own credential. `determined.experimental.core_v2` is `stalwart.harness.core_v2` (its own module
here, imported when asked for: it starts nothing until init()).
"""

import sys

from stalwart.experimental import (
    Checkpoint,
    CheckpointSortBy,
    CheckpointState,
    Experiment,
    Model,
    ModelOrderBy,
    ModelSortBy,
    ModelVersion,
    OrderBy,
    Trial,
    TrialMetrics,
    TrialSortBy,
    client,
)
from stalwart.experimental.client import Determined, ExperimentState, TrialState

# `import determined.experimental.client` and `from determined.experimental.client import ...` find the same module
sys.modules[f"{__name__}.client"] = client

__all__ = ["Checkpoint", "CheckpointSortBy", "CheckpointState", "Determined", "Experiment", "ExperimentState", "Model",
           "ModelOrderBy", "ModelSortBy", "ModelVersion", "OrderBy", "Trial", "TrialMetrics", "TrialSortBy",
           "TrialState", "client"]
