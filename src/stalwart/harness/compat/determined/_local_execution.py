"""Legacy trials off the cluster (Determined 0.37/0.38's `_execution._make_local_execution_env`): a Core API context
that reports nowhere, checkpoints into a local directory, and an EnvContext for the given config, for
`det.TrialContext.from_config(config)` when debugging a Trial class by hand."""

from __future__ import annotations

import os
from typing import Any

from stalwart.config import resolve_const_hparams
from stalwart.config.test_mode import test_mode_config
from stalwart.harness.core import Context
from stalwart.harness.core._context import init_off_cluster

from ._env_context import EnvContext, ExperimentConfig


def make_local_execution_env(config: dict[str, Any] | None, checkpoint_dir: str = "/tmp",
                             hparams: dict[str, Any] | None = None) -> tuple[Context, EnvContext]:
    """A local Core API context and the EnvContext of `config`; hyperparameters not given are sampled from it."""
    config = dict(config or {})
    if hparams is None:
        hparams = resolve_const_hparams(test_mode_config({**config, "searcher": config.get("searcher") or {}})
                                        ["hyperparameters"])
    core_context = init_off_cluster(None, os.path.abspath(checkpoint_dir))
    exp_config = ExperimentConfig(config)
    env = EnvContext(
        master_url="", master_cert_file=None, master_cert_name=None, experiment_config=exp_config, hparams=hparams,
        latest_checkpoint=None, steps_completed=0, use_gpu=False, container_gpus=[], slot_ids=[],
        debug=exp_config.debug_enabled(), det_trial_id="", det_experiment_id="", det_agent_id="", det_cluster_id="",
        trial_seed=exp_config.experiment_seed(), trial_run_id=1, allocation_id="", managed_training=False,
        test_mode=False, on_cluster=False)
    return core_context, env
