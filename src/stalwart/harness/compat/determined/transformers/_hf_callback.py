"""DetCallback: a `transformers.Trainer` run as a trial, through the Core API (Determined 0.38's behaviour).

- Metrics: each Trainer log is reported once per step, training logs in the `training` group and `eval_...`
  logs in `validation` (rules in `_metrics`), from the chief only; a validation must carry the searcher's
  metric (and its time metric) or it raises.
- Checkpoints: each save of the Trainer uploads `output_dir/checkpoint-<step>/` (and `runs/`, TensorBoard's
  default directory) as one checkpoint with `steps_completed` = the Trainer's global step.
- Resuming: the trial's latest checkpoint is downloaded into `output_dir` when the callback is built, and
  `args.resume_from_checkpoint` names it; pass that to `trainer.train(resume_from_checkpoint=...)`.
- Stopping: when the master asks the trial to stop (pause, ASHA, preemption), training stops at the next log,
  with a final checkpoint. A training that ends normally also gets a final evaluation and checkpoint.
- Progress: the fraction of `max_steps` (or of `num_train_epochs`) done.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import transformers
from transformers import trainer_utils

from stalwart.harness.core import Context
from stalwart.harness.info import ClusterInfo, get_cluster_info

from ._lengths import check_searcher_config
from ._metrics import EVAL, TRAIN, get_metric_type, select_metrics, with_step_counts

logger = logging.getLogger("det.transformers")


def _cluster_info() -> ClusterInfo:
    info = get_cluster_info()
    if info is None:
        raise RuntimeError("det.transformers.DetCallback must be run on a Determined cluster: this process is not a "
                           "task of one (no cluster info)")
    return info


def _output_dir(args: transformers.TrainingArguments) -> str:
    """Where the Trainer saves its checkpoints (transformers 5.x types it optional; its __post_init__ sets it)."""
    if not args.output_dir:
        raise ValueError("TrainingArguments.output_dir is not set: DetCallback uploads the checkpoints saved there")
    return args.output_dir


class DetCallback(transformers.TrainerCallback):
    """Report a Trainer's metrics and checkpoints to the cluster, resume it, and stop it when asked.

    Args:
        core_context: what `det.core.init()` returned.
        args: the `TrainingArguments` given to the Trainer (`resume_from_checkpoint` is set on them when the
            trial has a checkpoint to resume from).
        filter_metrics: report only metrics whose names contain one of these strings (the searcher's metric
            and time metric are always kept); default: all.
        user_data: a JSON-serialisable dict written into every checkpoint as `my_data.json`.
    """

    def __init__(self, core_context: Context, args: transformers.TrainingArguments,
                 filter_metrics: list[str] | None = None, user_data: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.core_context = core_context
        self.filter_metrics = list(filter_metrics) if filter_metrics else None
        self.user_data = user_data
        self.last_train_metrics = -1
        self.last_eval_metrics = -1
        self.last_save = -1
        self.last_progress = 0
        self.info = _cluster_info()
        self.load_last_checkpoint(args)
        self.searcher_metric: str | None = None
        self.time_metric: str | None = None
        if self.info.task_type == "TRIAL" and self.info.trial is not None:
            searcher = self.info.trial._config["searcher"]
            check_searcher_config(searcher, args)
            self.searcher_metric = searcher["metric"]
            self.time_metric = searcher.get("time_metric")
            if self.filter_metrics:  # the searcher's metrics are never filtered out
                self.filter_metrics.extend(m for m in (self.searcher_metric, self.time_metric) if m)
        # Determined's switches (undocumented there too) for the evaluation and save forced at the end
        self._force_final_save = True
        self._force_final_evaluate = True

    def load_last_checkpoint(self, args: transformers.TrainingArguments) -> None:
        """Download the trial's latest checkpoint into `output_dir`; point `args.resume_from_checkpoint` at it."""
        latest = self.info.latest_checkpoint
        if latest is None:
            return
        if getattr(args, "overwrite_output_dir", False) is True:  # transformers 4.x only; 5.x has no such field
            logger.info("Skipping the download of the latest checkpoint: overwrite_output_dir=True.")
            return
        output_dir = _output_dir(args)
        self.core_context.checkpoint.download(latest, output_dir)
        args.resume_from_checkpoint = trainer_utils.get_last_checkpoint(output_dir)  # type: ignore[no-untyped-call]  # unannotated in transformers
        logger.info("Latest checkpoint downloaded to %s.", args.resume_from_checkpoint)

    def on_log(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
               control: transformers.TrainerControl, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if logs is None:
            logger.warning("on_log called with empty logs")
            return
        kind = get_metric_type(logs)
        metrics = with_step_counts(select_metrics(logs, self.filter_metrics), state.global_step, state.epoch)
        if kind == TRAIN:
            # the Trainer's closing summary comes at the step of its last log: reported once
            if self.last_train_metrics != state.global_step:
                self.last_train_metrics = state.global_step
                if state.is_world_process_zero:
                    self.core_context.train.report_training_metrics(state.global_step, metrics)
        elif kind == EVAL:
            # an evaluation at the end of training can repeat the last one's step: reported once
            if self.last_eval_metrics != state.global_step:
                self.last_eval_metrics = state.global_step
                if state.is_world_process_zero:
                    self._check_eval_metrics(metrics)
                    self.core_context.train.report_validation_metrics(state.global_step, metrics)
        else:
            logger.warning("Metrics not reported: metric type = %s.", kind)
        if self.core_context.preempt.should_preempt():
            # The save happens in on_epoch_end: asking for it here could save twice (a training log and an
            # evaluation log at one step).
            control.should_training_stop = True

    def _check_eval_metrics(self, metrics: dict[str, Any]) -> None:
        missing = [(what, name, field) for what, name, field in (
            ("Searcher metric", self.searcher_metric, "searcher.metric"),
            ("Time metric", self.time_metric, "searcher.time_metric"),
        ) if name is not None and name not in metrics]
        if missing:
            named = " and ".join(f"{what} '{name}' (the {field} config field)" for what, name, field in missing)
            raise ValueError(f"{named} missing from the evaluation metrics {sorted(metrics)}: the evaluation must "
                             "emit them for the hyperparameter search, checkpoint GC and best-checkpoint selection "
                             "to work")

    def on_save(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
                control: transformers.TrainerControl, **kwargs: Any) -> None:
        self.last_save = state.global_step
        saved = f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and self.user_data is not None:
            with open(os.path.join(_output_dir(args), saved, "my_data.json"), "w") as f:
                json.dump(self.user_data, f)
        metadata: dict[str, Any] = {"steps_completed": state.global_step}
        if self.info.task_type == "TRIAL" and self.info.trial is not None:
            metadata["trial_id"] = self.info.trial.trial_id

        def selector(path: str) -> bool:
            return path.startswith((f"{saved}/", "runs/"))

        self.core_context.checkpoint.upload(_output_dir(args), metadata=metadata, shard=True, selector=selector)

    def on_step_end(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
                    control: transformers.TrainerControl, **kwargs: Any) -> None:
        if state.is_world_process_zero and args.max_steps > -1:
            # at most 100 progress reports a trial: one per whole percent
            progress = min(1.0, state.global_step / args.max_steps)
            if int(progress * 100) > self.last_progress:
                self.last_progress = int(progress * 100)
                self.core_context.train.report_progress(progress)

    def on_epoch_end(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
                     control: transformers.TrainerControl, **kwargs: Any) -> None:
        if self._training_ends(args, state, control):
            # the last chance to ask the Trainer for an evaluation and a save (it acts on them after this hook)
            preempted = self.core_context.preempt.should_preempt()
            if state.global_step > self.last_eval_metrics and self._force_final_evaluate and not preempted:
                control.should_evaluate = True
            if state.global_step > self.last_save and (self._force_final_save or preempted):
                control.should_save = True
        if state.is_world_process_zero and args.max_steps == -1 and state.epoch is not None:
            self.core_context.train.report_progress(min(1.0, state.epoch / args.num_train_epochs))

    @staticmethod
    def _training_ends(args: transformers.TrainingArguments, state: transformers.TrainerState,
                       control: transformers.TrainerControl) -> bool:
        if control.should_training_stop:
            return True
        if args.max_steps > -1:
            return state.global_step >= args.max_steps
        return state.epoch is not None and state.epoch >= args.num_train_epochs
