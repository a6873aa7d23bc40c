"""`det.ExperimentConfig` and `det.EnvContext`: the experiment config and trial environment a legacy
TrialController reads (Determined 0.37/0.38's `_experiment_config.py`, `_env_context.py`).

Stalwart's stored config may leave out sections Determined's master fills in, so each accessor falls back to
Determined's default for a missing key.
"""

from __future__ import annotations

from typing import Any

from stalwart.harness.info import ClusterInfo


class ExperimentConfig(dict[str, Any]):
    """The experiment config as a dict, with Determined's accessors."""

    def _section(self, key: str) -> dict[str, Any]:
        value = self.get(key)
        return value if isinstance(value, dict) else {}

    def debug_enabled(self) -> bool:
        return bool(self.get("debug", False))

    def scheduling_unit(self) -> int:
        return int(self.get("scheduling_unit") or 100)

    def native_parallel_enabled(self) -> bool:
        return bool(self._section("resources").get("native_parallel", False))

    def average_training_metrics_enabled(self) -> bool:
        return bool(self._section("optimizations").get("average_training_metrics", True))

    def slots_per_trial(self) -> int:
        return int(self._section("resources").get("slots_per_trial", 1))

    def experiment_seed(self) -> int:
        return int(self._section("reproducibility").get("experiment_seed") or 0)

    def profiling_enabled(self) -> bool:
        return bool(self._section("profiling").get("enabled", False))

    def profiling_interval(self) -> tuple[int, int | None]:
        if not self.profiling_enabled():
            return 0, 0
        profiling = self._section("profiling")
        return int(profiling.get("begin_on_batch", 0)), profiling.get("end_after_batch")

    def profiling_sync_timings(self) -> bool:
        return bool(self._section("profiling").get("sync_timings", True))

    def get_records_per_epoch(self) -> int | None:
        value = self.get("records_per_epoch")
        return int(value) if value is not None else None

    def _period(self, key: str) -> dict[str, Any]:
        value = self.get(key) or {}
        if not isinstance(value, dict):
            raise ValueError(f"{key} must be a length such as {{batches: 100}}, got {value!r}")
        return value

    def get_min_validation_period(self) -> dict[str, Any]:
        return self._period("min_validation_period")

    def get_min_checkpoint_period(self) -> dict[str, Any]:
        return self._period("min_checkpoint_period")

    def get_searcher_metric(self) -> str:
        metric = self._section("searcher").get("metric")
        if not isinstance(metric, str):
            raise ValueError(f"searcher.metric must be a string, got {metric!r}")
        return metric

    def get_optimizations_config(self) -> dict[str, Any]:
        return self._section("optimizations")

    def get_checkpoint_storage(self) -> dict[str, Any]:
        return self._section("checkpoint_storage")

    def get_entrypoint(self) -> str | list[str]:
        entrypoint = self.get("entrypoint")
        if isinstance(entrypoint, str) or (isinstance(entrypoint, list)
                                           and all(isinstance(e, str) for e in entrypoint)):
            return entrypoint
        raise ValueError(f"invalid entrypoint in experiment config: {entrypoint!r}")


class EnvContext:
    """Everything about the trial's environment that Determined's harness handed its TrialControllers."""

    def __init__(self, master_url: str, master_cert_file: str | None, master_cert_name: str | None,
                 experiment_config: dict[str, Any], hparams: dict[str, Any], latest_checkpoint: str | None,
                 steps_completed: int, use_gpu: bool, container_gpus: list[str], slot_ids: list[int], debug: bool,
                 det_trial_id: str, det_experiment_id: str, det_agent_id: str, det_cluster_id: str, trial_seed: int,
                 trial_run_id: int, allocation_id: str, managed_training: bool, test_mode: bool,
                 on_cluster: bool) -> None:
        self.master_url = master_url
        self.master_cert_file = master_cert_file
        self.master_cert_name = master_cert_name
        self.experiment_config = ExperimentConfig(experiment_config)
        self.hparams = hparams
        self.latest_checkpoint = latest_checkpoint
        self.steps_completed = steps_completed
        self.use_gpu = use_gpu
        self.container_gpus = container_gpus
        self.slot_ids = slot_ids
        self.debug = debug
        self.det_trial_id = det_trial_id
        self.det_experiment_id = det_experiment_id
        self.det_agent_id = det_agent_id
        self.det_cluster_id = det_cluster_id
        self.trial_seed = trial_seed
        self.trial_run_id = trial_run_id
        self.allocation_id = allocation_id
        self.managed_training = managed_training
        self.test_mode = test_mode
        self.on_cluster = on_cluster


def env_from_cluster_info(info: ClusterInfo) -> EnvContext:
    """The EnvContext of the trial this process runs, as Determined's harness built it from the cluster info."""
    trial = info.trial
    if trial is None:
        raise RuntimeError(f"this {info.task_type} task is not a trial: a TrialController runs only in trials")
    return EnvContext(
        master_url=info.master_url, master_cert_file=None, master_cert_name=None,
        experiment_config=trial._config, hparams=trial.hparams, latest_checkpoint=info.latest_checkpoint,
        steps_completed=trial.steps_completed, use_gpu=bool(info.gpu_uuids), container_gpus=list(info.gpu_uuids),
        slot_ids=list(info.slot_ids), debug=bool(trial._config.get("debug", False)),
        det_trial_id=str(trial.trial_id), det_experiment_id=str(trial.experiment_id), det_agent_id=info.agent_id,
        det_cluster_id=info.cluster_id, trial_seed=trial.trial_seed, trial_run_id=trial.trial_run_id,
        allocation_id=info.allocation_id, managed_training=True, test_mode=False, on_cluster=True,
    )
