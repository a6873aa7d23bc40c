"""determined.transformers without a cluster: which Trainer log values DetCallback reports and as what, its checks
of the Trainer's length against the searcher's (Determined 0.38.1, harness/determined/transformers/_hf_callback.py),
and the callback's refusal off-cluster."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from stalwart.harness.compat.determined.transformers._lengths import check_searcher_config
from stalwart.harness.compat.determined.transformers._metrics import (
    EVAL,
    TEST,
    TRAIN,
    get_metric_type,
    select_metrics,
    with_step_counts,
)
from unit.compat.test_determined_modules import in_trial

TRAIN_LOG = {"loss": 0.69, "grad_norm": 0.15, "learning_rate": 0.003, "epoch": 0.16}
EVAL_LOG = {"eval_loss": 0.5, "eval_accuracy": 0.9, "eval_runtime": 0.02, "eval_samples_per_second": 5000.0,
            "eval_steps_per_second": 80.0, "epoch": 0.31}
SUMMARY_LOG = {"train_runtime": 2.0, "train_samples_per_second": 317.0, "train_steps_per_second": 19.8,
               "total_flos": 12.0, "train_loss": 0.45, "epoch": 1.25}


def test_logs_are_typed_by_their_keys() -> None:
    assert get_metric_type(TRAIN_LOG) == TRAIN
    assert get_metric_type(SUMMARY_LOG) == TRAIN
    assert get_metric_type(EVAL_LOG) == EVAL
    assert get_metric_type({"test_loss": 1.0, "epoch": 1.0}) == TEST
    assert get_metric_type({"epoch": 1.0, "eval_loss": 1.0}) == EVAL  # any eval_ key, not just the first
    assert get_metric_type({}) == TRAIN


def test_epoch_and_speed_figures_are_dropped_and_the_log_is_left_alone() -> None:
    assert select_metrics(TRAIN_LOG, None) == {"loss": 0.69, "grad_norm": 0.15, "learning_rate": 0.003}
    assert select_metrics(EVAL_LOG, None) == {"eval_loss": 0.5, "eval_accuracy": 0.9}
    assert select_metrics(SUMMARY_LOG, None) == {"total_flos": 12.0, "train_loss": 0.45}
    assert select_metrics({"eval_compilation_time": 1.0, "x": 2}, None) == {"x": 2}
    assert "epoch" in TRAIN_LOG and "eval_runtime" in EVAL_LOG


def test_filter_metrics_keeps_names_containing_one_of_its_strings() -> None:
    assert select_metrics(EVAL_LOG, ["accuracy"]) == {"eval_accuracy": 0.9}
    assert select_metrics(TRAIN_LOG, ["loss", "rate"]) == {"loss": 0.69, "learning_rate": 0.003}
    assert select_metrics(EVAL_LOG, ["runtime", "epoch"]) == {}  # dropped even when asked for
    assert select_metrics(TRAIN_LOG, []) == select_metrics(TRAIN_LOG, None)


def test_batches_and_epochs_come_from_the_trainer_state_unless_logged() -> None:
    assert with_step_counts({"loss": 1.0}, 15, 0.47) == {"loss": 1.0, "batches": 15, "epochs": 0.47}
    assert with_step_counts({"batches": 3, "epochs": 9}, 15, 0.47) == {"batches": 3, "epochs": 9}


@dataclass
class Args:
    max_steps: int = -1
    num_train_epochs: float = 3.0


@pytest.mark.parametrize("searcher, args", [
    ({"name": "single", "metric": "eval_loss"}, Args(max_steps=40)),
    ({"name": "single", "metric": "eval_loss", "max_length": {"batches": 40}}, Args(max_steps=40)),
    ({"name": "single", "metric": "eval_loss", "max_length": {"epochs": 3}}, Args()),
    ({"name": "adaptive_asha", "time_metric": "batches", "max_time": 40}, Args(max_steps=40)),
    ({"name": "async_halving", "time_metric": "epochs", "max_time": 2}, Args(num_train_epochs=2)),
    ({"name": "adaptive_asha", "time_metric": "tokens", "max_time": 10_000}, Args(max_steps=40)),
    ({"name": "random", "time_metric": "batches", "max_time": 7}, Args(max_steps=40)),  # not a stop-based ASHA
])
def test_lengths_that_agree_or_are_not_checked(searcher: dict, args: Args) -> None:
    check_searcher_config(searcher, args)


@pytest.mark.parametrize("searcher, args, message", [
    ({"name": "single", "max_length": 40}, Args(max_steps=40), "unitless searcher.max_length.*--max_steps"),
    ({"name": "single", "max_length": {"batches": 30}}, Args(max_steps=40),
     r"batches=40 != batches=30.*--max_steps"),
    ({"name": "single", "max_length": {"batches": 40}}, Args(), r"epochs=3.0 != batches=40.*--num_train_epochs"),
    ({"name": "adaptive_asha", "time_metric": "batches", "max_time": 100}, Args(max_steps=40),
     r"max_time of the adaptive_asha searcher \(batches=40 != batches=100\)"),
    ({"name": "async_halving", "time_metric": "epochs", "max_time": 2}, Args(max_steps=40),
     r"batches=40 != epochs=2"),
])
def test_lengths_that_disagree_are_refused(searcher: dict, args: Args, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_searcher_config(searcher, args)


def test_the_callback_is_a_trainer_callback_that_refuses_to_run_off_cluster(tmp_path) -> None:
    got = in_trial(f"""
        import json
        import transformers
        from determined.transformers import DetCallback
        args = transformers.TrainingArguments(output_dir={str(tmp_path)!r}, use_cpu=True, report_to="none")
        try:
            DetCallback(None, args)
        except RuntimeError as err:
            print(json.dumps([issubclass(DetCallback, transformers.TrainerCallback), str(err)]))
    """, HF_HUB_OFFLINE="1")
    assert got == [True, "det.transformers.DetCallback must be run on a Determined cluster: this process is not a "
                         "task of one (no cluster info)"]
