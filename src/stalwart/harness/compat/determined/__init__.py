"""Stalwart's implementation of Determined's public Python API, importable as `determined` inside trials.

Only trial processes see this package (the launcher puts it first on PYTHONPATH), so it wins even
when the real `determined` distribution is installed in the same environment.
"""

from __future__ import annotations

import importlib
import types

from stalwart.harness.errors import InvalidHP
from stalwart.harness.info import ClusterInfo, TrialInfo, get_cluster_info

from . import errors, workload
from ._env_context import EnvContext, ExperimentConfig
from ._trial_layer import LegacyTrial, TrialContext, TrialController, _DistributedBackend

__version__ = "0.38.1+stalwart"
LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

_LAZY = {"core", "pytorch", "launch", "searcher", "util", "common", "tensorboard", "keras", "tensorflow", "horovod",
         "experimental", "transformers", "deepspeed"}


def __getattr__(name: str) -> types.ModuleType:
    """`import determined as det; det.core.init()` works without importing every submodule up front."""
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'determined' (Stalwart's implementation) has no attribute '{name}'")


__all__ = ["ClusterInfo", "InvalidHP", "LOG_FORMAT", "TrialInfo", "errors", "get_cluster_info"]
__all__ += ["EnvContext", "ExperimentConfig", "LegacyTrial", "TrialContext", "TrialController", "_DistributedBackend",
            "workload"]
