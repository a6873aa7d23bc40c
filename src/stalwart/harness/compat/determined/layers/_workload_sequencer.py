"""The workloads a legacy TrialController is driven through, made from the Core API (Determined 0.37/0.38's
`layers/_workload_sequencer.py`).

The chief's `WorkloadSequencer` turns the searcher's operation, the config's validation and checkpoint periods
(`min_validation_period`, `min_checkpoint_period`, `scheduling_unit`, `checkpoint_policy`,
`perform_initial_validation`) and the master's preemption signal into RUN_STEP / COMPUTE_VALIDATION_METRICS /
CHECKPOINT_MODEL workloads, and reports each response through the Core API: training and validation metrics,
searcher progress, early exits. `make_compatibility_workloads` hands the same workloads to every worker.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from stalwart.harness.core import EarlyExitReason, SearcherMode, SearcherOperation, Unit

from .. import workload
from .._env_context import EnvContext
from ..util import is_numerical_scalar

if TYPE_CHECKING:
    from stalwart.harness.core import Context

log = logging.getLogger("determined")

WorkloadGenerator = Generator[tuple[workload.Workload, workload.ResponseFunc], None, None]


def yield_and_await_response(
        wkld: workload.Workload) -> Generator[tuple[workload.Workload, workload.ResponseFunc], None, workload.Response]:
    """Yield `wkld` with a response function, then return what the controller answered."""
    answers: list[workload.Response] = []
    yield wkld, answers.append
    if len(answers) != 1:
        raise RuntimeError(f"the TrialController must call the response function of {wkld} once, "
                           f"it called it {len(answers)} times")
    return answers[0]


class ShouldExit(Exception):
    """Leaves the sequencer's loop from anywhere; unsaved work is checkpointed unless told otherwise."""

    def __init__(self, skip_exit_checkpoint: bool = False) -> None:
        super().__init__()
        self.skip_exit_checkpoint = skip_exit_checkpoint


def last_validation(core_context: Context, trial_id: int) -> int | None:
    """steps_completed of this trial's latest validation on the master (from any earlier run), if any."""
    info = core_context.info
    if info is None:
        return None
    from stalwart.harness.session import trial_client

    points = trial_client(info).trial_metrics(trial_id, group="validation").metrics
    return max((p.steps_completed for p in points), default=None)


class WorkloadSequencer(workload.Source):
    """The chief's stream of workloads for one trial, reporting each response to the master."""

    class SavableState:
        """What a checkpoint keeps of the sequencer (`get_state()` / `load_state()`)."""

        def __init__(self, trial_id: int, last_ckpt: int = 0, steps_completed: int = 0, step_id: int = 0,
                     last_val: int = 0) -> None:
            self.trial_id = trial_id
            self.last_ckpt = last_ckpt
            self.steps_completed = steps_completed
            self.step_id = step_id
            self.last_val = last_val

    def __init__(self, core_context: Context, env: EnvContext, global_batch_size: int) -> None:
        self.core_context = core_context
        self.env = env
        self._trial_id = int(env.det_trial_id)
        self._exp_id = int(env.det_experiment_id)
        unit = core_context.searcher.get_configured_units()
        if unit is None:
            log.warning("The searcher has no length units, which the Trial APIs need: assuming epochs.")
            unit = Unit.EPOCHS
        self._unit = unit
        config = env.experiment_config
        self.val_from_previous_run = last_validation(core_context, self._trial_id)
        self.want_initial_val = bool(config.get("perform_initial_validation", False))
        self.ckpt_policy = str(config.get("checkpoint_policy") or "best")
        self.state = self.SavableState(trial_id=self._trial_id)
        self.records_per_epoch = config.get_records_per_epoch()
        self.global_batch_size = global_batch_size
        self.min_val_period_batches = self._period_batches(config.get_min_validation_period(), "min_validation_period")
        self.min_ckpt_period_batches = self._period_batches(config.get_min_checkpoint_period(),
                                                            "min_checkpoint_period")

    def _period_batches(self, period: dict[str, Any], key: str) -> int:
        """A period in batches; an empty or zero period is never."""
        if not period:
            return sys.maxsize
        if "epochs" in period and self.records_per_epoch is None:
            raise ValueError(f"records_per_epoch must be specified if {key} is configured in epoch units.")
        batches = self.as_batches(**period)
        return batches if batches >= 1 else sys.maxsize

    def get_state(self) -> Any:
        return vars(self.state)

    def load_state(self, state: Any) -> None:
        """Continue from a checkpoint's state, unless it is another trial's (a warm start)."""
        if state.get("trial_id") != self._trial_id:
            return
        self.state = self.SavableState(**state)
        if self.state.steps_completed == self.val_from_previous_run:
            self.state.last_val = self.state.steps_completed  # that validation was of this very checkpoint

    def as_batches(self, batches: int | None = None, records: int | None = None, epochs: int | None = None) -> int:
        if sum(v is not None for v in (batches, records, epochs)) != 1:
            raise ValueError(f"invalid length: batches={batches} records={records} epochs={epochs}")
        if batches is not None:
            return int(batches)
        if self.global_batch_size <= 0:
            raise ValueError(f"global_batch_size must be positive, got {self.global_batch_size}")
        if records is not None:
            return max(int(records) // self.global_batch_size, 1)
        if not isinstance(self.records_per_epoch, int):
            raise ValueError("records_per_epoch must be an integer to count lengths in epochs")
        return max(int(epochs or 0) * self.records_per_epoch // self.global_batch_size, 1)

    def check_for_preemption(self) -> None:
        if self.core_context.preempt.should_preempt():
            raise ShouldExit()

    def _workload(self, kind: workload.Workload.Kind, step_id: int, num_batches: int = 0) -> workload.Workload:
        return workload.Workload(kind=kind, e_id=self._exp_id, t_id=self._trial_id, s_id=step_id,
                                 num_batches=num_batches, total_batches_processed=self.state.steps_completed)

    def _refuse_invalid_hp(self, response: workload.Response, skip_exit_checkpoint: bool = False) -> dict[str, Any]:
        if isinstance(response, workload.InvalidHP):
            self.core_context.train.report_early_exit(EarlyExitReason.INVALID_HP)
            raise ShouldExit(skip_exit_checkpoint=skip_exit_checkpoint)
        if not isinstance(response, dict):
            raise TypeError(f"a workload's response must be a dict or workload.InvalidHP(), got {response!r}")
        return response

    def train(self, num_batches: int, op: SearcherOperation) -> WorkloadGenerator:
        self.core_context.train.set_status("training")
        wkld = self._workload(workload.Workload.Kind.RUN_STEP, self.state.step_id + 1, num_batches)
        response = self._refuse_invalid_hp((yield from yield_and_await_response(wkld)))
        metrics = response.get("metrics") or {}
        self.state.steps_completed += num_batches
        self.state.step_id += 1
        self.core_context.train.report_training_metrics(
            steps_completed=self.state.steps_completed, metrics=metrics.get("avg_metrics") or {},
            batch_metrics=metrics.get("batch_metrics") or None)
        if self._unit is Unit.BATCHES:
            op.report_progress(self.state.steps_completed)
        elif self._unit is Unit.RECORDS:
            op.report_progress(self.global_batch_size * self.state.steps_completed)
        else:
            op.report_progress(self.state.steps_completed / self.as_batches(epochs=1))
        self._check_stop(response)
        self.check_for_preemption()

    def _check_stop(self, response: dict[str, Any]) -> None:
        if response.get("stop_requested"):
            self.core_context.train.report_early_exit(EarlyExitReason.USER_REQUESTED_STOP)
            raise ShouldExit()

    def _searcher_metric(self, metrics: dict[str, Any]) -> Any:
        name = self.env.experiment_config.get_searcher_metric()
        if name not in metrics:
            raise RuntimeError(f"Search method is configured to use metric '{name}' but model definition returned "
                               f"validation metrics {list(metrics)}. The metric used by the search method must be "
                               "one of the validation metrics returned by the model definition.")
        value = metrics[name]
        if not is_numerical_scalar(value):
            raise RuntimeError(f"Searcher validation metric '{name}' returned a non-scalar value: {value}")
        return value

    def is_best_validation(self, now: float, before: float | None) -> bool:
        if before is None:
            return True
        smaller_is_better = (self.env.experiment_config.get("searcher") or {}).get("smaller_is_better", True)
        return bool(now < before) if smaller_is_better else bool(now > before)

    def validate(self, op: SearcherOperation | None) -> WorkloadGenerator:
        self.core_context.train.set_status("validating")
        wkld = self._workload(workload.Workload.Kind.COMPUTE_VALIDATION_METRICS, self.state.step_id)
        response = self._refuse_invalid_hp((yield from yield_and_await_response(wkld)))
        metrics = (response.get("metrics") or {}).get("validation_metrics")
        if not isinstance(metrics, dict):
            raise TypeError("a COMPUTE_VALIDATION_METRICS response must hold {'metrics': {'validation_metrics': "
                            f"{{...}}}}, got {response!r}")
        searcher_metric = self._searcher_metric(metrics)
        if op is not None and self.batches_until_op_complete(op) < 1:
            op.report_completed(searcher_metric)
        wants_best = self.ckpt_policy == "best" and not self.checkpoint_is_current()
        best_before = self.core_context.train.get_experiment_best_validation() if wants_best else None
        self.state.last_val = self.state.steps_completed
        self.core_context.train.report_validation_metrics(steps_completed=self.state.steps_completed,
                                                          metrics=metrics)
        self._check_stop(response)
        if not self.checkpoint_is_current() and (
                self.ckpt_policy == "all" or (wants_best and self.is_best_validation(searcher_metric, best_before))):
            yield from self.checkpoint(already_exiting=False)
        self.check_for_preemption()

    def checkpoint(self, already_exiting: bool) -> WorkloadGenerator:
        self.core_context.train.set_status("checkpointing")
        self.state.last_ckpt = self.state.steps_completed  # before the yield: get_state() is saved in it
        wkld = self._workload(workload.Workload.Kind.CHECKPOINT_MODEL, self.state.step_id)
        response = yield from yield_and_await_response(wkld)
        if already_exiting:
            if isinstance(response, workload.InvalidHP):
                self.core_context.train.report_early_exit(EarlyExitReason.INVALID_HP)
            return
        self._check_stop(self._refuse_invalid_hp(response, skip_exit_checkpoint=True))
        self.check_for_preemption()

    def batches_until_val(self) -> int:
        return self.state.last_val + self.min_val_period_batches - self.state.steps_completed

    def batches_until_ckpt(self) -> int:
        return self.state.last_ckpt + self.min_ckpt_period_batches - self.state.steps_completed

    def batches_until_op_complete(self, op: SearcherOperation) -> int:
        length = {self._unit.name.lower(): op.length}
        return self.as_batches(**length) - self.state.steps_completed

    def checkpoint_is_current(self) -> bool:
        return self.state.last_ckpt == self.state.steps_completed

    def validation_is_current(self) -> bool:
        return self.state.last_val == self.state.steps_completed

    def __iter__(self) -> workload.Stream:
        try:
            if self.want_initial_val and self.val_from_previous_run is None and self.state.steps_completed == 0:
                yield from self.validate(None)
            for op in self.core_context.searcher.operations(SearcherMode.ChiefOnly):
                yield from self._run_operation(op)
                if not op._completed:
                    break  # a restart after this length was trained and validated: nothing left to do
        except ShouldExit as e:
            if not e.skip_exit_checkpoint and not self.checkpoint_is_current():
                yield from self.checkpoint(already_exiting=True)

    def _run_operation(self, op: SearcherOperation) -> WorkloadGenerator:
        """Train to the operation's length in steps, validating and checkpointing on the configured periods."""
        while self.batches_until_op_complete(op) > 0:
            yield from self.train(max(1, min(self.batches_until_ckpt(), self.batches_until_val(),
                                             self.batches_until_op_complete(op),
                                             self.env.experiment_config.scheduling_unit())), op)
            if self.batches_until_val() < 1:
                yield from self.validate(op)
            if self.batches_until_ckpt() < 1:
                yield from self.checkpoint(already_exiting=False)
        if not self.checkpoint_is_current():
            yield from self.checkpoint(already_exiting=False)
        if not self.validation_is_current():
            yield from self.validate(op)


def make_compatibility_workloads(core_context: Context, env: EnvContext,
                                 global_batch_size: int) -> tuple[workload.Stream, WorkloadSequencer | None]:
    """The workloads of this worker, and the chief's sequencer (None on other workers; save its `get_state()` in
    checkpoints and `load_state()` it on restore to resume exactly).

    The chief makes the workloads and broadcasts each to the other workers; after each one all wait for each
    other, and a final broadcast of None ends the workers' streams. Only the chief's response functions report
    anything: the workers' ignore their responses.
    """
    dist = core_context.distributed
    sequencer = WorkloadSequencer(core_context, env, global_batch_size) if dist.get_rank() == 0 else None

    def chief_workloads(chief: WorkloadSequencer) -> workload.Stream:
        for wkld, respond in chief:
            dist.broadcast(wkld)
            yield wkld, respond
            dist.gather(None)
        dist.broadcast(None)

    def worker_workloads() -> workload.Stream:
        while (wkld := dist.broadcast(None)) is not None:
            yield wkld, workload.ignore_workload_response
            dist.gather(None)

    return (chief_workloads(sequencer) if sequencer is not None else worker_workloads()), sequencer
