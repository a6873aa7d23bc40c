"""A Determined 0.37-style model definition with its own TrialController, written as Determined's e2e fixtures
were (e2e_tests/tests/fixtures/no_op): the Trial names the controller in `trial_controller_class`, the
controller builds its workloads with `layers.make_compatibility_workloads`, trains per RUN_STEP, answers
validations, checkpoints its state and the sequencer's, and restores both.

The "model" is one number w that moves toward the hyperparameter `target` by `rate` per batch; its loss is
(w - target)^2. `step_sleep` slows each batch (a test pauses the trial mid-run).
"""

import json
import pathlib
import time
from typing import Any

import determined as det
from determined import layers, tensorboard, util, workload
from determined.common import check

IMPORTED = [det.TrialContext, det.TrialController, det.LegacyTrial, det.EnvContext, det._DistributedBackend,
            workload.Workload, workload.Workload.Kind.RUN_STEP, workload.Workload.Kind.COMPUTE_VALIDATION_METRICS,
            workload.Workload.Kind.CHECKPOINT_MODEL, workload.Response, workload.Stream,
            layers.make_compatibility_workloads]


class ApproachContext(det.TrialContext):
    """The batch sizes of this trial, as Determined's NoOpTrialContext computes them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.per_slot_batch_size, self.global_batch_size = util.calculate_batch_sizes(
            self.get_hparams(), self.env.experiment_config.slots_per_trial(), "ApproachTrial")


class ApproachController(det.TrialController):
    CHECKPOINT_FILE = "weight.json"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        print("IMPORTED", len(IMPORTED), type(self.env).__name__, type(self.context).__name__, flush=True)
        self.metric_writer = self.create_metric_writer()
        self.target = float(self.env.hparams["target"])
        self.rate = float(self.env.hparams["rate"])
        self.step_sleep = float(self.env.hparams.get("step_sleep", 0))
        self.wlsq = None
        if self.workloads is None:
            self.workloads, self.wlsq = layers.make_compatibility_workloads(
                self.context._core, self.env, self.context.global_batch_size)
        self.weight, self.batches = 0.0, 0
        if self.env.latest_checkpoint is not None:
            with self.context._core.checkpoint.restore_path(self.env.latest_checkpoint) as path:
                self.load(pathlib.Path(path))

    @staticmethod
    def from_trial(trial_inst: det.LegacyTrial, *args: Any, **kwargs: Any) -> det.TrialController:
        return ApproachController(*args, **kwargs)

    @staticmethod
    def pre_execute_hook(env: det.EnvContext, distributed_backend: det._DistributedBackend) -> None:
        print("PRE_EXECUTE", env.det_trial_id, distributed_backend.use_torch(), flush=True)

    def create_metric_writer(self) -> tensorboard.BatchMetricWriter:
        return tensorboard.get_metric_writer()

    def run(self) -> None:
        done = 0
        for w, respond in self.workloads:
            done += 1
            if w.kind == workload.Workload.Kind.RUN_STEP:
                response = self.train_for_step(w.num_batches)
            elif w.kind == workload.Workload.Kind.COMPUTE_VALIDATION_METRICS:
                response = {"metrics": {"validation_metrics": {"validation_loss": self.loss()}, "num_inputs": 1},
                            "stop_requested": self.context.get_stop_requested()}
            elif w.kind == workload.Workload.Kind.CHECKPOINT_MODEL:
                response = {}
                if self.is_chief:
                    with self.context._core.checkpoint.store_path({"steps_completed": self.batches}) as (path, uuid):
                        self.save(path)
                    response = {"uuid": uuid}
            else:
                raise AssertionError(f"Unexpected workload: {w.kind}")
            respond(response)
            self.upload_tb_files()
        print(f"WORKLOADS rank={self.context.distributed.get_rank()} done={done}", flush=True)

    def loss(self) -> float:
        return (self.weight - self.target) ** 2

    def train_for_step(self, num_batches: int) -> dict[str, Any]:
        batch_metrics = []
        for _ in range(num_batches):
            time.sleep(self.step_sleep)
            self.weight += self.rate * (self.target - self.weight)
            batch_metrics.append({"loss": self.loss()})
        self.batches += num_batches
        metrics = det.util.make_metrics(self.context.per_slot_batch_size * num_batches, batch_metrics)
        self.metric_writer.on_train_step_end(self.batches, metrics=metrics["avg_metrics"],
                                             batch_metrics=metrics["batch_metrics"])
        return {"metrics": metrics, "stop_requested": self.context.get_stop_requested()}

    def save(self, path: pathlib.Path) -> None:
        (path / self.CHECKPOINT_FILE).write_text(json.dumps({"weight": self.weight, "batches": self.batches}))
        if self.wlsq is not None:
            (path / "workload_sequencer.json").write_text(json.dumps(self.wlsq.get_state()))

    def load(self, path: pathlib.Path) -> None:
        saved = json.loads((path / self.CHECKPOINT_FILE).read_text())
        check.is_type(saved["batches"], int)
        self.weight, self.batches = float(saved["weight"]), saved["batches"]
        print("RESTORED", self.batches, flush=True)
        state = path / "workload_sequencer.json"
        if self.wlsq is not None and state.exists():
            self.wlsq.load_state(json.loads(state.read_text()))


class ApproachTrial(det.LegacyTrial):
    trial_context_class = ApproachContext
    trial_controller_class = ApproachController

    def __init__(self, context: det.TrialContext) -> None:
        self.context = context
